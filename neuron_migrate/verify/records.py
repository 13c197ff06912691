"""What a side's recorder wrote: one ``rank<N>.jsonl`` per rank, read back into events keyed for comparison.

An event's key is what makes it the same event on both sides: its kind, the optimizer step it happened in
and its place among the events of that kind in that step (the third batch of step 2, say).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FILE_NAME = re.compile(r"rank(\d+)(?:-\d+)?\.jsonl")
COMPARED = ("params-before", "batch", "output", "loss", "grads", "params-after")


@dataclass
class Record:
    rank: int
    events: list[dict[str, Any]] = field(default_factory=list)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["kind"] == kind]

    @property
    def steps(self) -> int:
        return sum(1 for event in self.events if event["kind"] == "params" and event.get("when") == "after")

    @property
    def stopped(self) -> bool:
        return any(event["kind"] == "stop" for event in self.events)

    @property
    def network(self) -> list[str]:
        return sorted({f"{e['host']}:{e['port']}" if e.get("port") else e["host"] for e in self.of("network")})

    @property
    def failures(self) -> list[str]:
        """What the recorder could not read, in a sentence each."""
        return [f"{e.get('what')}: {e.get('error')}" for e in self.of("recorder-error")]

    def keyed(self) -> dict[tuple[str, int, int], dict[str, Any]]:
        """The compared events by key, in the order the program made them."""
        seen: Counter[tuple[str, int]] = Counter()
        out: dict[tuple[str, int, int], dict[str, Any]] = {}
        for event in self.events:
            kind = _compared_kind(event)
            if kind is None:
                continue
            ordinal = seen[(kind, event["step"])]
            seen[(kind, event["step"])] += 1
            out[(kind, event["step"], ordinal)] = event
        return out

    def devices(self) -> Counter[str]:
        """How many tensors the program computed on each device type: its losses, outputs, gradients and
        parameters. Batches are left out: a data loader hands them out on the host before they are moved."""
        found: Counter[str] = Counter()
        for event in self.events:
            if event["kind"] == "loss" and "device" in event:
                found[event["device"]] += 1
            elif event["kind"] in ("output", "grads", "params"):
                found.update(tensor["device"] for tensor in event.get("tensors", ()) if "device" in tensor)
        return found

    def first_loss(self, step: int) -> float | None:
        return next((event["value"] for event in self.of("loss") if event["step"] == step), None)


def _compared_kind(event: dict[str, Any]) -> str | None:
    kind = event.get("kind")
    if kind == "params":
        return f"params-{event.get('when')}"
    return kind if kind in COMPARED else None


def global_view(records: dict[int, Record]) -> Record:
    """What the global batch decides, when the two sides ran different numbers of ranks: the parameters and
    (averaged) gradients of rank 0, and each loss as the mean over the ranks. Batches and outputs are per rank
    and left out."""
    first = records[min(records)]
    losses: dict[tuple[int, int], list[float]] = {}
    for record in records.values():
        seen: Counter[int] = Counter()
        for event in record.of("loss"):
            losses.setdefault((event["step"], seen[event["step"]]), []).append(event["value"])
            seen[event["step"]] += 1
    events, seen = [], Counter()
    for event in first.events:
        if event["kind"] in ("batch", "output"):
            continue
        if event["kind"] == "loss":
            values = losses[(event["step"], seen[event["step"]])]
            seen[event["step"]] += 1
            event = {**event, "value": sum(values) / len(values)}
        events.append(event)
    return Record(first.rank, events)


def load(folder: Path) -> dict[int, Record]:
    """Every rank's record in ``folder``. A line cut short (a process killed while writing) is dropped.

    Each process writes ``rank<N>-<pid>.jsonl``. A launcher (xmp.spawn's parent) shares its worker's rank and
    records nothing but its start: the process of a rank that recorded the most is that rank's record."""
    records: dict[int, Record] = {}
    for path in sorted(folder.glob("rank*.jsonl"), key=lambda p: p.stat().st_mtime):
        match = FILE_NAME.fullmatch(path.name)
        if match is None:
            continue
        record = Record(int(match[1]), _events(path))
        kept = records.get(record.rank)
        if kept is None or len(record.events) >= len(kept.events):
            records[record.rank] = record
    return records


def _events(path: Path) -> list[dict[str, Any]]:
    events = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events
