"""Cards made in processes of their own, away from the caller: a card that crashes the interpreter or passes its
time is a row that says so, and the cards after it still get made.

A worker process makes a queue of cards one after the other (torch, transformers and the emulator are imported
once per worker, not once per card) and writes each card the moment it is done; the parent watches for it and
stops a worker whose current card passes its time, then starts a new worker on the rest of the queue."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence

from neuron_migrate.analyzers.models.model import NOT_READY, Card, Problem

DEFAULT_SECONDS = 600
POLL_SECONDS = 0.2
START_SECONDS = 60  # a fresh worker's imports, on top of its first card's time


def cards_in_processes(specs: Sequence[str], jobs: int, seconds: float,
                       done: Callable[[Card], None] = lambda card: None) -> list[Card]:
    """The cards of ``specs`` in the order given, made by ``jobs`` workers; ``done`` hears of each as it ends."""
    cards: list[Card | None] = [None] * len(specs)
    queue = list(range(len(specs)))
    lock = threading.Lock()

    def take() -> int | None:
        with lock:
            return queue.pop(0) if queue else None

    def worker() -> None:
        while (first := take()) is not None:
            for number, card in _worker_run(specs, first, take, seconds):
                cards[number] = card
                done(card)

    threads = [threading.Thread(target=worker) for _ in range(max(1, min(jobs, len(specs))))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [card for card in cards if card is not None]


def _worker_run(specs, first, take, seconds):
    """One worker process: it starts on card ``first`` and takes more while it lives; yields (number, card)."""
    with tempfile.TemporaryDirectory(prefix="neuron-migrate-cards-") as folder:
        inbox = os.path.join(folder, "queue")
        os.mkdir(inbox)
        log = open(os.path.join(folder, "stderr.txt"), "w+", encoding="utf-8")  # noqa: SIM115 - lives with the worker
        process = _start(folder, specs[first], first, log)
        current, deadline = first, time.monotonic() + seconds + START_SECONDS
        while True:
            card = _read(folder, current)
            if card is not None:
                yield current, card
                current = take()
                if current is None:
                    _tell(inbox, None)
                    process.wait()
                    log.close()
                    return
                _tell(inbox, (current, specs[current]))
                deadline = time.monotonic() + seconds
                continue
            if process.poll() is not None or time.monotonic() > deadline:
                yield current, _stopped(specs[current], process, seconds, log)
                if process.poll() is None:
                    process.kill()
                process.wait()
                log.close()
                return
            time.sleep(POLL_SECONDS)


def _start(folder: str, spec: str, number: int, log) -> subprocess.Popen:
    command = [sys.executable, "-m", "neuron_migrate.analyzers.models", spec, "--out", folder,
               "--first", str(number), "--queue", os.path.join(folder, "queue")]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log,
                            env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})


def _tell(inbox: str, item) -> None:
    """Hand the worker its next card (or ``None``: stop) through a file it waits for."""
    path = os.path.join(inbox, "next.json")
    with open(path + ".partial", "w", encoding="utf-8") as handle:
        json.dump(item, handle)
    os.replace(path + ".partial", path)


def _read(folder: str, number: int) -> Card | None:
    path = os.path.join(folder, f"{number}.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as handle:
        return Card.from_dict(json.load(handle))


def _stopped(spec: str, process: subprocess.Popen, seconds: float, log) -> Card:
    if process.poll() is None:
        why = f"the card took longer than {seconds:.0f} s and was stopped"
    else:
        log.seek(0)
        tail = log.read().strip().splitlines()
        why = f"the card's process ended with code {process.returncode}: {tail[-1] if tail else 'no output'}"
    card = Card(architecture=spec, source=spec, model_class="?", verdict=NOT_READY)
    card.problems.append(Problem("run", "error", why))
    return card
