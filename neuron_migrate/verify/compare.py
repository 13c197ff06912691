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


MODEL_WIDE = ("params-before", "grads", "params-after")  # events that hold every tensor of the model
NOISE_SHARE = 0.1  # a gradient that moved by this share of its own norm between the sides is mostly residue
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
                    key: tuple[str, int, int], noise: frozenset[str] = frozenset()) -> tuple[float, Mismatch | None]:
    """The largest relative difference over the tensors, and the first tensor that differs."""
    if len(legacy) != len(migrated):
        return math.inf, Mismatch(key, "tensors", f"{len(legacy)} tensors", f"{len(migrated)} tensors", None)
    reshaped = next(((i, a, b) for i, (a, b) in enumerate(zip(legacy, migrated)) if a["shape"] != b["shape"]), None)
    if reshaped is not None:
        index, a, b = reshaped
        return math.inf, Mismatch(key, a.get("name") or f"tensor {index}", _shape(a), _shape(b), None, reshaped=True)
    if key[0] in MODEL_WIDE:
        return _compare_model(legacy, migrated, rtol, key, noise)
    worst, first = 0.0, None
    for index, (a, b) in enumerate(zip(legacy, migrated)):
        name = a.get("name") or f"tensor {index}"
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


def _compare_model(legacy: list[dict[str, Any]], migrated: list[dict[str, Any]], rtol: float,
                   key: tuple[str, int, int], noise: frozenset[str] = frozenset()) -> tuple[float, Mismatch | None]:
    """All of a model's parameters (or gradients) as one vector: the norm of their difference over the larger
    of their norms. A tensor that is zero up to rounding (the bias of a layer a batch norm follows) then does not
    part the programs by its rounding residue, while an update that differs anywhere still does: updates are
    about 1e-3 of the weights, a hundred times the default rtol. The tensor that differs most is named. The
    tensors named in ``noise`` are left out (their gradients were rounding residue: see ``noise_tensors``)."""
    moved = [0.0 if a.get("name") in noise else _moved(a, b) for a, b in zip(legacy, migrated)]
    size = max(math.sqrt(sum(t["norm"] ** 2 for t in side)) for side in (legacy, migrated))
    total = math.sqrt(sum(m ** 2 for m in moved))
    if any(math.isnan(m) for m in moved):
        total = math.inf
    difference = 0.0 if total == 0 else total / size if size > 0 else math.inf
    if difference <= rtol:
        return difference, None
    index = max(range(len(moved)), key=lambda i: moved[i] if not math.isnan(moved[i]) else math.inf)
    a, b = legacy[index], migrated[index]
    typed = a["dtype"] != b["dtype"]
    name = a.get("name") or f"tensor {index}"
    return difference, Mismatch(key, name, _summary(a, typed), _summary(b, typed), difference, (a["dtype"], b["dtype"]))


def _moved(a: dict[str, Any], b: dict[str, Any]) -> float:
    """An estimate of the norm of ``a - b`` from the two norms and the sampled values."""
    gaps = [_gap(x, y) for x, y in zip(a["values"], b["values"])]
    norms = _gap(a["norm"], b["norm"])
    if math.isnan(norms) or any(math.isnan(gap) for gap in gaps):
        return math.nan
    count = math.prod(a["shape"]) or 1
    sampled = math.sqrt(sum(gap ** 2 for gap in gaps) / len(gaps) * count) if gaps else 0.0
    return max(norms, sampled)


def _gap(x: float, y: float) -> float:
    """``|x - y|``, where two NaNs (or the same infinity) are no gap and one NaN is an unknown one."""
    if math.isnan(x) or math.isnan(y):
        return 0.0 if math.isnan(x) and math.isnan(y) else math.nan
    return 0.0 if x == y else abs(x - y)


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


def noise_tensors(legacy: dict[str, Any] | None, migrated: dict[str, Any] | None, rtol: float) -> frozenset[str]:
    """The parameters whose gradient, in these two ``grads`` events, is rounding residue: it differs on its own
    scale while it is below ``rtol`` of the model's gradient (the bias of a layer that a batch norm follows,
    whose exact gradient is zero). An adaptive optimizer divides each gradient by its own running size, so
    Adam turns such residue into an update of up to a tenth of the learning rate, in a direction the residue's
    sign picks: those parameters part by construction, not by the migration. The loss and the outputs still
    show whether they matter."""
    if legacy is None or migrated is None:
        return frozenset()
    theirs = {t.get("name"): t for t in migrated["tensors"]}
    pairs = [(a, theirs[a.get("name")]) for a in legacy["tensors"] if a.get("name") in theirs]
    size = max(math.sqrt(sum(t["norm"] ** 2 for t in side)) for side in (legacy["tensors"], migrated["tensors"]))
    noise = set()
    for a, b in pairs:
        own = max(a["norm"], b["norm"])
        if 0 < own <= rtol * size and _moved(a, b) > NOISE_SHARE * own:
            noise.add(a["name"])
    return frozenset(noise)


def compare_events(key, legacy: dict[str, Any], migrated: dict[str, Any], rtol: float,
                   noise: frozenset[str] = frozenset()) -> tuple[float, Mismatch | None]:
    if key[0] == "loss":
        difference = relative(legacy["value"], migrated["value"])
        if difference > rtol:
            return difference, Mismatch(key, "", f"{legacy['value']:.8g}", f"{migrated['value']:.8g}", difference)
        return difference, None
    return compare_tensors(legacy["tensors"], migrated["tensors"], rtol, key, noise)


@dataclass
class Comparison:
    rows: list[StepRow]
    first: Mismatch | None
    compared: dict[str, int]
    outputs: list[OutputRow]
    # the largest gradient difference when gradients alone differed and every parameter after them agreed
    gradient_noise: float | None = None
    # parameters left out of the comparison after a step because their gradient was rounding residue
    residue: frozenset[str] = frozenset()


def compare(legacy: Record, migrated: Record, rtol: float, complete_only: bool = False) -> Comparison:
    """``complete_only``: compare the steps both sides finished and nothing after (a side failed)."""
    ours, theirs = _align_batches(legacy.keyed(), migrated.keyed())
    steps = min(legacy.steps, migrated.steps)
    if complete_only:
        last = steps - 1
    else:
        last = steps if legacy.stopped and migrated.stopped else max(legacy.steps, migrated.steps)
    worst: dict[tuple[str, int], float] = {}
    compared: dict[str, int] = {}
    mismatches: list[Mismatch] = []
    residue: set[str] = set()
    for key in _program_order(ours, theirs):
        if key[1] > last:
            continue
        noise = frozenset()
        if key[0] == "params-after":
            grads = ("grads", key[1], 0)
            noise = noise_tensors(ours.get(grads), theirs.get(grads), rtol)
            residue |= noise
        mismatch, difference = _compare_key(key, ours, theirs, rtol, noise)
        if difference is not None:
            compared[WHAT[key[0]]] = compared.get(WHAT[key[0]], 0) + 1
            worst[(key[0], key[1])] = max(worst.get((key[0], key[1]), 0.0), difference)
        if mismatch is not None:
            mismatches.append(mismatch)
    first, parted = _first_divergence(mismatches)
    gradient_noise = None
    if first is None and mismatches:
        gradient_noise = max(m.difference or 0.0 for m in mismatches)
    rows = [_row(step, legacy, migrated, worst, step not in parted) for step in range(steps)]
    outputs = _output_rows(ours, theirs, rtol) if not max(legacy.steps, migrated.steps) else []
    return Comparison(rows, first, compared, outputs, gradient_noise, frozenset(residue))


def _first_divergence(mismatches: list[Mismatch]) -> tuple[Mismatch | None, set[int]]:
    """The first mismatch that matters, and the steps that parted.

    Gradients alone do not part two programs: backward passes that sum in another order differ at rounding
    level, and the parameters after the step say whether that mattered. A gradient that differs in the step
    where something else first differs is where it started, and is named."""
    decisive = [m for m in mismatches if m.key[0] != "grads"]
    if not decisive:
        return None, set()
    step = decisive[0].step
    return next(m for m in mismatches if m.step == step), {m.step for m in decisive}


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


def _compare_key(key, ours, theirs, rtol, noise=frozenset()) -> tuple[Mismatch | None, float | None]:
    kind, step, ordinal = key
    have = (_count(ours, kind, step), _count(theirs, kind, step))
    if have[0] != have[1]:
        # an extra call shifts every later one: the count is what parted, not the values it misaligns
        noun = PLURAL.get(kind, WHAT[kind] + "s")
        return Mismatch(("count", step, ordinal), f"{noun} in step {step}", str(have[0]), str(have[1]), None), None
    difference, mismatch = compare_events(key, ours[key], theirs[key], rtol, noise)
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
