"""``python -m neuron_migrate.analyzers.models SPEC --out DIR [--first N] [--queue INBOX]``: make cards in this
process and write each as ``DIR/<n>.json`` the moment it is done. With ``--queue``, after each card it waits
for ``INBOX/next.json`` (``[n, spec]``, or ``null`` to stop): the worker of ``runs``, which watches the folder and
stops a card that passes its time."""

from __future__ import annotations

import argparse
import json
import os
import time

from neuron_migrate.analyzers.models import diffusion
from neuron_migrate.analyzers.models.card import build_card
from neuron_migrate.analyzers.models.tiny import read_spec

WAIT_SECONDS = 0.05


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m neuron_migrate.analyzers.models")
    parser.add_argument("spec")
    parser.add_argument("--out", required=True, help="folder for the cards, one JSON file each")
    parser.add_argument("--first", type=int, default=0, help="the number of the first card's file")
    parser.add_argument("--queue", help="folder where the next card to make is handed over")
    options = parser.parse_args()
    item = (options.first, options.spec)
    while item is not None:
        number, spec = item
        found = read_spec(spec)
        run = diffusion.build if diffusion.is_diffusers(found) else None
        _write(os.path.join(options.out, f"{number}.json"), build_card(found, run).to_dict())
        item = _next(options.queue) if options.queue else None
    return 0


def _write(target: str, data: dict) -> None:
    with open(target + ".partial", "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1)
    os.replace(target + ".partial", target)


def _next(inbox: str):
    path = os.path.join(inbox, "next.json")
    while not os.path.exists(path):
        time.sleep(WAIT_SECONDS)
    with open(path, encoding="utf-8") as handle:
        item = json.load(handle)
    os.remove(path)
    return item


if __name__ == "__main__":
    raise SystemExit(main())
