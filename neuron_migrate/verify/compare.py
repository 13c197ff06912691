"""Compare two sides' records event by event and find where they first part.

Numbers are equal when their relative difference is at most ``rtol``. A tensor is equal when its shape is,
its norm is, and each sampled value is, measured against the tensor's own scale (its root mean square): a
value near zero that moved by a rounding error is not a divergence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from neuron_migrate.report.verification import OutputRow, StepRow
from neuron_migrate.verify.records import COMPARED, Record

WHAT = {
    "params-before": "initial parameter",
    "batch": "batch",
    "output": "output",
    "loss": "loss",
    "grads": "gradient",
    "params-after": "parameter",
}


PLURAL = {"loss": "losses", "params-before": "initial parameter sets", "params-after": "optimizer steps",
          "grads": "gradient sets"}


@dataclass
class Mismatch:
    key: tuple[str, int, int]
    tensor: str
    legacy: str
    migrated: str
    difference: float | None
    dtypes: tuple[str, str] = ("", "")
    at: str = ""  # the user's line that made the migrated side's event
    reshaped: bool = False  # the tensors' shapes differ

    @property
    def what(self) -> str:
        return WHAT.get(self.key[0], "count")

    @property
    def step(self) -> int:
        return self.key[1]


def relative(a: float, b: float, scale: float = 0.0) -> float:
    if math.isnan(a) or math.isnan(b):
        return 0.0 if math.isnan(a) and math.isnan(b) else math.inf
    if a == b:  # the same infinity as well
        return 0.0
    denominator = max(abs(a), abs(b), scale)
    return abs(a - b) / denominator if denominator > 0 else 0.0


def compare_tensors(legacy: list[dict[str, Any]], migrated: list[dict[str, Any]], rtol: float,
                    key: tuple[str, int, int]) -> tuple[float, Mismatch | None]:
    """The largest relative difference over the tensors, and the first tensor that differs."""
    if len(legacy) != len(migrated):
        return math.inf, Mismatch(key, "tensors", f"{len(legacy)} tensors", f"{len(migrated)} tensors", None)
    worst, first = 0.0, None
    for index, (a, b) in enumerate(zip(legacy, migrated)):
        name = a.get("name") or f"tensor {index}"
        if a["shape"] != b["shape"]:
            return math.inf, first or Mismatch(key, name, _shape(a), _shape(b), None, reshaped=True)
        difference = _tensor_difference(a, b)
        worst = max(worst, difference)
        if difference > rtol and first is None:
            typed = a["dtype"] != b["dtype"]
            shown = _first_different_value(a, b) or (_summary(a, typed), _summary(b, typed))
            first = Mismatch(key, name, *shown, difference, (a["dtype"], b["dtype"]))
    return worst, first


def _tensor_difference(a: dict[str, Any], b: dict[str, Any]) -> float:
    count = math.prod(a["shape"]) or 1
    scale = max(a["norm"], b["norm"]) / math.sqrt(count)
    values = [relative(x, y, scale) for x, y in zip(a["values"], b["values"])]
    return max([relative(a["norm"], b["norm"]), *values])


def _first_different_value(a: dict[str, Any], b: dict[str, Any]) -> tuple[str, str] | None:
    """For a tensor recorded whole (token ids, labels): the first position where the two differ."""
    count = math.prod(a["shape"])
    if len(a["values"]) != count or len(b["values"]) != count:
        return None
    for index, (x, y) in enumerate(zip(a["values"], b["values"])):
        if x != y:
            return f"{_value(x)} at flat index {index}", _value(y)
    return None


def _value(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.8g}"


def _shape(tensor: dict[str, Any]) -> str:
    return f"shape {tuple(tensor['shape'])} {tensor['dtype']}"


def _summary(tensor: dict[str, Any], typed: bool) -> str:
    return f"norm {tensor['norm']:.8g}" + (f" {tensor['dtype']}" if typed else "")


def compare_events(key, legacy: dict[str, Any], migrated: dict[str, Any], rtol: float) -> tuple[float, Mismatch | None]:
    if key[0] == "loss":
        difference = relative(legacy["value"], migrated["value"])
        if difference > rtol:
            return difference, Mismatch(key, "", f"{legacy['value']:.8g}", f"{migrated['value']:.8g}", difference)
        return difference, None
    return compare_tensors(legacy["tensors"], migrated["tensors"], rtol, key)


@dataclass
class Comparison:
    rows: list[StepRow]
    first: Mismatch | None
    compared: dict[str, int]
    outputs: list[OutputRow]


def compare(legacy: Record, migrated: Record, rtol: float, complete_only: bool = False) -> Comparison:
    """``complete_only``: compare the steps both sides finished and nothing after (a side failed)."""
    ours, theirs = _align_batches(legacy.keyed(), migrated.keyed())
    steps = min(legacy.steps, migrated.steps)
    if complete_only:
        last = steps - 1
    else:
        last = steps if legacy.stopped and migrated.stopped else max(legacy.steps, migrated.steps)
    worst: dict[tuple[str, int], float] = {}
    first: Mismatch | None = None
    compared: dict[str, int] = {}
    parted: set[int] = set()
    for key in _program_order(ours, theirs):
        if key[1] > last:
            continue
        mismatch, difference = _compare_key(key, ours, theirs, rtol)
        if difference is not None:
            compared[WHAT[key[0]]] = compared.get(WHAT[key[0]], 0) + 1
            worst[(key[0], key[1])] = max(worst.get((key[0], key[1]), 0.0), difference)
        if mismatch is not None:
            parted.add(key[1])
            first = first or mismatch
    rows = [_row(step, legacy, migrated, worst, step not in parted) for step in range(steps)]
    outputs = _output_rows(ours, theirs, rtol) if not max(legacy.steps, migrated.steps) else []
    return Comparison(rows, first, compared, outputs)


def _output_rows(ours: dict, theirs: dict, rtol: float) -> list[OutputRow]:
    rows = []
    keys = [key for key in _program_order(ours, theirs) if key[0] == "output"]
    for index, key in enumerate(keys):
        a, b = ours.get(key), theirs.get(key)
        difference = None
        if a is not None and b is not None:
            difference, _ = compare_tensors(a["tensors"], b["tensors"], rtol, key)
        rows.append(OutputRow(index, (b or a)["what"], (b or a).get("at", ""), _first_norm(a), _first_norm(b),
                              difference, difference is not None and difference <= rtol))
    return rows


def _first_norm(event: dict[str, Any] | None) -> float | None:
    tensors = event["tensors"] if event else []
    return tensors[0]["norm"] if tensors else None


def _compare_key(key, ours, theirs, rtol) -> tuple[Mismatch | None, float | None]:
    kind, step, ordinal = key
    have = (_count(ours, kind, step), _count(theirs, kind, step))
    if have[0] != have[1]:
        # an extra call shifts every later one: the count is what parted, not the values it misaligns
        noun = PLURAL.get(kind, WHAT[kind] + "s")
        return Mismatch(("count", step, ordinal), f"{noun} in step {step}", str(have[0]), str(have[1]), None), None
    difference, mismatch = compare_events(key, ours[key], theirs[key], rtol)
    if mismatch is not None:
        mismatch.at = theirs[key].get("at", "")
    return mismatch, difference


def _count(keyed: dict, kind: str, step: int) -> int:
    ordinal = 0
    while (kind, step, ordinal) in keyed:
        ordinal += 1
    return ordinal


def _program_order(ours: dict, theirs: dict) -> list[tuple[str, int, int]]:
    """Every key once, by step, then in the order a training step makes its events."""
    return sorted(set(ours) | set(theirs), key=lambda key: (key[1], COMPARED.index(key[0]), key[2]))


def _align_batches(ours: dict, theirs: dict) -> tuple[dict, dict]:
    """Pair the k-th batch of each side, in the step the migrated program used it.

    torch_xla's MpDeviceLoader reads the host loader ahead from a thread, so the legacy side records batches
    steps before they are used, and more than are used; the extra ones are dropped."""
    ours_batches = [event for key, event in ours.items() if key[0] == "batch"]
    their_batches = [event for key, event in theirs.items() if key[0] == "batch"]
    ours = {key: event for key, event in ours.items() if key[0] != "batch"}
    theirs = {key: event for key, event in theirs.items() if key[0] != "batch"}
    ordinals: dict[int, int] = {}
    for a, b in zip(ours_batches, their_batches):
        step = b["step"]
        key = ("batch", step, ordinals.get(step, 0))
        ordinals[step] = key[2] + 1
        ours[key], theirs[key] = a, b
    return ours, theirs


def _row(step: int, legacy: Record, migrated: Record, worst: dict, equal: bool) -> StepRow:
    a, b = legacy.first_loss(step), migrated.first_loss(step)
    loss = relative(a, b) if a is not None and b is not None else None
    return StepRow(step, a, b, loss, worst.get(("params-after", step)), equal)
