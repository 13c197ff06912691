"""The shipped table of readiness cards, read without torch: what the static audit says of an architecture a
project loads."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

TABLE = Path(__file__).with_name("cards.json")


@lru_cache(maxsize=1)
def table() -> dict:
    try:
        return json.loads(TABLE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"rows": {}, "versions": {}}


def card_row(model_type: str) -> dict | None:
    return table()["rows"].get(model_type)


def versions() -> str:
    return ", ".join(f"{k} {v}" for k, v in table().get("versions", {}).items())
