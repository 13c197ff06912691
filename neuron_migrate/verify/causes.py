"""The likely cause of a divergence, and the edits and markers of the rewrite that touch it.

What parted first says most: different batches are a data question, different gradients after equal losses a
collective one, different parameters after equal gradients the optimizer's. The rewrite's own findings carry
risk tags (numerics, collectives, rng, ...); those whose tag fits the divergence are listed with their lines.
"""

from __future__ import annotations

import ast
import json
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from neuron_migrate.markers import find as find_marker
from neuron_migrate.report.verification import Divergence, Edit
from neuron_migrate.verify.compare import Mismatch, compare_tensors
from neuron_migrate.verify.records import Record

DEVICE = "neuron"

BF16_VARS = ("XLA_USE_BF16", "XLA_DOWNCAST_BF16")
MAX_EDITS = 6


@dataclass(frozen=True)
class Cause:
    text: str
    fix: str
    risks: tuple[str, ...]
    mention: str = ""  # edits whose message names this come first


DATA = Cause(
    "the programs read different data: the batches differ in order or content",
    "give both sides the same data in the same order: the same sampler seed and shuffling, the same shard per "
    "rank, the same local files (verify fixes torch's, Python's and NumPy's seeds when the programs start)",
    ("rng",),
)
INITIAL = Cause(
    "the models start from different weights: their random initialization drew from another stream, or they "
    "loaded different checkpoints",
    "seed before building the model on both sides and build it on the CPU before moving it to the device "
    "(torch_xla's device generator is not the CPU's); load the same checkpoint",
    ("rng", "checkpoint-format"),
)
FORWARD = Cause(
    "the forward pass computes something else with the same weights and data: an op, a dtype or a layer differs",
    "compare the model code of both sides at the edits below",
    ("numerics",),
)
GRADIENTS = Cause(
    "the losses agree but the gradients differ: the backward pass or the gradient reduction differs",
    "check loss scaling, gradient accumulation and clipping at the edits below",
    ("collectives", "numerics"),
)
AVERAGING = Cause(
    "the losses agree but the gradients differ across {world} ranks: the gradients are not averaged over the "
    "ranks as xm.optimizer_step did",
    "wrap the model in DistributedDataParallel (or average the gradients by hand before optimizer.step())",
    ("collectives",),
)
UPDATE = Cause(
    "the gradients agree but the parameters after optimizer.step() differ: the optimizer's update differs",
    "compare the optimizer and its settings (weight decay, betas, eps), gradient clipping and the scheduler",
    ("collectives", "performance"),
)
LONE_RANKS = Cause(
    "every legacy rank read the same batches where the migrated ranks read shards of their own: the legacy "
    "processes did not see each other (torch_xla's PJRT CPU device runs each process as a world of one)",
    "rerun with --legacy-nproc 1 and give the legacy side the same global batch with --legacy-args (the per-rank "
    "batch times the ranks)",
    (),
)
SHAPES = Cause(
    "the {what} has another shape on each side: the programs pad or batch differently (the static shapes the "
    "rewrite set up so that each step compiles once, padding to a fixed length, drop_last)",
    "give both sides the same padding and batch size; the edits below are the ones that set shapes",
    ("performance",),
)
PATHS = Cause(
    "the programs took different paths: one made more calls of this kind than the other",
    "look for code that runs on one side only (a branch on the device type, a step the rewrite removed)",
    (),
)


def explain(first: Mismatch, legacy: Record, migrated: Record, legacy_env: dict[str, str],
            edits: list[Edit], original: str = "legacy") -> Divergence:
    cause = (cuda_cause(first, legacy, migrated) if original == "cuda" else None) or \
        _cause(first, legacy, migrated, legacy_env)
    mention = cause.mention or "\0"
    fitting = [edit for edit in edits if set(edit.risks) & set(cause.risks)] if cause.risks else []
    fitting.sort(key=lambda edit: (mention not in edit.message, *_nearness(edit, first.at)))
    fitting = _distinct(fitting)
    return Divergence(first.step, first.what, first.tensor, first.legacy, first.migrated, first.difference,
                      cause=cause.text, fix=cause.fix, edits=fitting[:MAX_EDITS], at=first.at)


def _distinct(edits: list[Edit]) -> list[Edit]:
    """One edit per rule and message: a marker repeats its finding, a launcher and a notebook the same edit."""
    seen: set[tuple[str, str]] = set()
    out = []
    for edit in edits:
        if (edit.rule, edit.message) not in seen:
            seen.add((edit.rule, edit.message))
            out.append(edit)
    return out


def _nearness(edit: Edit, at: str) -> tuple[int, int, str, int]:
    """Edits in the file of the diverging line first, the nearest line first; then the others in file order."""
    path, _, line = at.rpartition(":")
    same = bool(path) and Path(edit.path).name == Path(path).name
    distance = abs(edit.line - int(line)) if same and line.isdigit() else 0
    return (0 if same else 1, distance, edit.path, edit.line)


def _cause(first: Mismatch, legacy: Record, migrated: Record, legacy_env: dict[str, str]) -> Cause:
    what = first.key[0]
    if first.reshaped and what in ("batch", "output"):
        return replace(SHAPES, text=SHAPES.text.format(what=first.what))
    if what == "batch":
        return DATA
    bf16 = [name for name in BF16_VARS if legacy_env.get(name, "0") not in ("", "0", "false")]
    if bf16:
        # the switch rounds everything on the device, the initial weights included: it explains any of them
        return _bf16_switch(bf16[0])
    if first.dtypes[0] != first.dtypes[1] and all(first.dtypes):
        # a cast makes every value differ, the initial weights included: the dtype says more than the values
        return _precision(first)
    if what == "params-before":
        return INITIAL
    if what in ("output", "loss"):
        return _forward(first, legacy, migrated, legacy_env)
    if what == "grads":
        world = _world(legacy)
        if world > 1 or _world(migrated) > 1:
            return replace(AVERAGING, text=AVERAGING.text.format(world=max(world, _world(migrated))))
        return GRADIENTS
    if what == "params-after":
        return _update(first, legacy, migrated)
    return PATHS


def _forward(first: Mismatch, legacy: Record, migrated: Record, legacy_env: dict[str, str]) -> Cause:
    if _dropout(legacy, first.step) or _dropout(migrated, first.step):
        text = ("the model runs dropout in training mode: torch_xla draws its masks from the XLA device's own "
                "generator, the migrated program from torch's, so the masks differ")
        fix = "compare with --no-dropout (dropout off on both sides), or with the model in eval mode"
        return Cause(text, fix, ())
    ours, theirs = _autocast(legacy, first.step), _autocast(migrated, first.step)
    if ours != theirs:
        on, off = ("legacy", "migrated") if ours else ("migrated", "legacy")
        text = f"autocast is on in the {on} program and off in the {off} one at this step"
        return Cause(text, "enable the same autocast on both sides (same dtype)", ("numerics",))
    if ours and first.difference is not None and first.difference < 5e-2:
        text = ("both sides autocast to a lower precision, and their autocast policies differ (which ops run in "
                "bfloat16 is not the same in torch_xla and on the neuron device): a difference of this size is "
                "expected, not a migration bug")
        fix = "compare with --rtol 5e-2, or without autocast to check the float32 program"
        return Cause(text, fix, ("numerics",))
    return FORWARD


def _precision(first: Mismatch) -> Cause:
    ours, theirs = first.dtypes
    subject = f"{first.what} {first.tensor}".strip()
    text = (f"the migrated side computes in {theirs}, the legacy in {ours}: the {subject} is {theirs} on the "
            f"migrated side (a cast such as model.to(torch.{theirs}), or an autocast, that one side has)")
    return Cause(text, "use the same dtype on both sides: the same casts of the model and its inputs, the same "
                 "autocast", ("numerics",), mention=theirs)


def _bf16_switch(name: str) -> Cause:
    text = (f"{name}=1 ran the legacy side's float32 tensors in bfloat16; the migrated program has no such "
            "switch, so it computes in float32")
    fix = ("to match it, cast the model and its inputs to torch.bfloat16 (or use torch.autocast(\"neuron\", "
           "dtype=torch.bfloat16)); a difference of about 1e-2 then remains between rounding schemes")
    return Cause(text, fix, ("numerics",), mention=name)


def _dropout(record: Record, step: int) -> bool:
    return any(event.get("dropout") for event in record.of("output") if event["step"] == step)


def _autocast(record: Record, step: int) -> bool:
    # backward() usually runs after the autocast block has closed: the forward's outputs say more
    return any(event.get("autocast") for event in [*record.of("loss"), *record.of("output")] if event["step"] == step)


def _update(first: Mismatch, legacy: Record, migrated: Record) -> Cause:
    ours, theirs = _learning_rates(legacy, first.step), _learning_rates(migrated, first.step)
    if ours and theirs and ours != theirs:
        text = f"the learning rate differs: {_rates(ours)} on the legacy side, {_rates(theirs)} on the migrated one"
        fix = ("use the same learning rate: no edit of the rewrite sets it, so look at the code that computes it "
               "(a rate scaled by the world size, a scheduler that starts elsewhere)")
        return Cause(text, fix, ())
    return UPDATE


def _learning_rates(record: Record, step: int) -> list[float]:
    found = [event.get("lr") or [] for event in record.of("grads") if event["step"] == step]
    return found[0] if found else []


def _rates(rates: list[float]) -> str:
    return ", ".join(f"{rate:g}" for rate in rates)


def _world(record: Record) -> int:
    return next((event.get("world", 1) for event in record.of("start")), 1)


def ranks_alone(legacy: list[Record], migrated: list[Record]) -> bool:
    """Whether the legacy ranks all read one first batch while the migrated ranks read different ones."""
    def first_batches(records: list[Record]) -> list:
        return [json.dumps(next(iter(record.of("batch")), {}).get("tensors"), sort_keys=True) for record in records]

    ours, theirs = first_batches(legacy), first_batches(migrated)
    return len(ours) > 1 and len(set(ours)) == 1 and len(set(theirs)) > 1


def lone_ranks(divergence: Divergence) -> None:
    divergence.cause, divergence.fix, divergence.edits = LONE_RANKS.text, LONE_RANKS.fix, []


def markers(root: Path, risks_of: dict[str, list[str]]) -> list[Edit]:
    """The rewrite's markers left in the migrated code (the review lines and TODOs), with their rule's risks."""
    found = []
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.suffix in (".py", ".sh"))
    for path in files:
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for number, line in enumerate(lines, 1):
            marker = find_marker(line)
            # a line tag naming several rules points at their TODOs above it, which are counted there
            if marker and marker.rule:
                found.append(Edit(marker.rule, str(path), number, marker.text.strip(), risks_of.get(marker.rule, [])))
    return found


ON_CPU = Cause(
    "the migrated program ran on the CPU: none of its {count} recorded tensors was on {device}",
    "make the program pick torch.device(\"neuron\"): a helper that falls back to the CPU when an import fails "
    "(try: import torch_neuronx / except ImportError) needs that import to work where it runs, and a --device "
    "flag or an environment variable must name neuron",
    (),
)


def on_cpu(migrated: list[Record], root: Path, script: Path) -> Divergence | None:
    """A divergence when the migrated ranks computed every recorded tensor off the device, and where the
    program chose the CPU when its source says so. Agreeing with the legacy program on the CPU proves nothing
    about the device."""
    devices = sum((record.devices() for record in migrated), start=Counter())
    if not devices or devices[DEVICE]:
        return None
    count = sum(devices.values())
    shown = ", ".join(f"{kind}" for kind in sorted(devices))
    text = ON_CPU.text.format(count=count, device=DEVICE)
    at = ""
    fallback = cpu_fallback(root, script)
    if fallback is not None:
        path, line, code, handled = fallback
        at = f"{path}:{line}"
        text += f"; {'the except handler that ' if handled else 'the line that '}chose it: {code}"
    return Divergence(0, "device", "", "", shown, None, cause=text, fix=ON_CPU.fix, at=at)


def cpu_fallback(root: Path, script: Path) -> tuple[str, int, str, bool] | None:
    """The line of the migrated program that most likely picked the CPU: a "cpu" device in an except handler
    first (the fallback of a guarded import), then in the else of a branch, then anywhere; the entry script's
    lines before its modules'."""
    files = [script, *(p for p in sorted(root.rglob("*.py")) if p != script)] if root.is_dir() else [script]
    found = []
    for order, path in enumerate(files):
        try:
            source = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if "cpu" not in source.lower():
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        lines = source.splitlines()
        for rank, node in _cpu_choices(tree):
            found.append((rank, order, node.lineno, str(path), lines[node.lineno - 1].strip()))
    if not found:
        return None
    rank, _, line, path, code = min(found)
    return path, line, code, rank == 0


def _cpu_choices(tree: ast.AST):
    """(rank, node) of each statement that chooses the CPU as a device: 0 in an except handler, 1 in the else
    of a branch, 2 elsewhere."""
    def visit(node: ast.AST, rank: int):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.Return)) and node.value is not None:
            if _chooses_cpu(node.value):
                yield rank, node
        elif isinstance(node, ast.Call) and _device_call(node) and _chooses_cpu(node):
            yield rank, node  # torch.device("cpu") passed on directly (.to(torch.device("cpu")) aside)
        for field, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            inner = rank
            if isinstance(node, ast.ExceptHandler):
                inner = 0
            elif isinstance(node, ast.If) and field == "orelse":
                inner = min(rank, 1)
            for child in children:
                if isinstance(child, ast.AST):
                    yield from visit(child, inner)

    seen = set()
    for rank, node in sorted(visit(tree, 2), key=lambda item: item[0]):
        if node.lineno not in seen:
            seen.add(node.lineno)
            yield rank, node


def _chooses_cpu(value: ast.AST) -> bool:
    if isinstance(value, ast.Constant):
        return isinstance(value.value, str) and value.value.lower() == "cpu"
    if isinstance(value, ast.Call) and _device_call(value):
        return bool(value.args) and _chooses_cpu(value.args[0])
    if isinstance(value, ast.IfExp):
        return _chooses_cpu(value.orelse)
    if isinstance(value, ast.BoolOp):
        return any(_chooses_cpu(item) for item in value.values)
    return False


def _device_call(call: ast.Call) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name == "device"


UNAVERAGED = Cause(
    "the migrated ranks do not average their gradients: they started from the same parameters and part after "
    "step {step} (rank {other} against rank {first})",
    "average the gradients over the ranks before optimizer.step(), as xm.optimizer_step did: wrap the model in "
    "DistributedDataParallel (or all_reduce each gradient and divide it by the world size) after "
    'dist.init_process_group("neuron")',
    ("collectives",),
)


def unaveraged_ranks(migrated: dict[int, Record], rtol: float) -> Divergence | None:
    """Data parallelism seen inside the migrated side alone: ranks that start from the same parameters and
    hold different ones after a step did not average their gradients. This is what a legacy run on the CPU
    cannot show (its ranks run alone). Ranks that start apart (a sharded or tensor-parallel model, another
    seed per rank) are not compared."""
    if len(migrated) < 2:
        return None
    ranks = sorted(migrated)
    keyed = {rank: migrated[rank].keyed() for rank in ranks}
    first = keyed[ranks[0]]
    starts = sorted(key for key in first if key[0] == "params-before")
    if not starts or not all(_agree(first, keyed[rank], starts[0], rtol) is None for rank in ranks[1:]):
        return None
    for key in sorted((key for key in first if key[0] == "params-after"), key=lambda key: (key[1], key[2])):
        for rank in ranks[1:]:
            mismatch = _agree(first, keyed[rank], key, rtol)
            if mismatch is not None:
                text = UNAVERAGED.text.format(step=key[1], other=rank, first=ranks[0])
                return Divergence(key[1], "ranks", mismatch.tensor, f"rank {ranks[0]}: {mismatch.legacy}",
                                  f"rank {rank}: {mismatch.migrated}", mismatch.difference, cause=text,
                                  fix=UNAVERAGED.fix)
    return None


def _agree(ours: dict, theirs: dict, key, rtol: float) -> Mismatch | None:
    """The mismatch of one keyed parameter event between two ranks (None when they agree or one lacks it)."""
    if key not in ours or key not in theirs:
        return None
    _, mismatch = compare_tensors(ours[key].get("tensors", []), theirs[key].get("tensors", []), rtol, key)
    return mismatch


# A CUDA original (``--original cuda``): what a GPU program does to its numbers that the migrated one does not.
EXPECTED_BF16 = 5e-2  # bfloat16 keeps 8 bits of mantissa: a relative difference below this is its rounding
EXPECTED_TF32 = 1e-2  # TF32 keeps 10 bits: its matmuls differ from float32 by about 1e-3
EXPECTED_ORDER = 1e-3  # float32 kernels that sum in another order: about 1e-6 per op, drifting over steps

SCALER_SKIPPED = Cause(
    "the original's GradScaler skipped the optimizer step of step {step} (its scaled gradients overflowed to inf "
    "or NaN at loss scale {scale:g}, as a scaler does while it finds its scale): the original made no update for "
    "that batch and the migrated program did",
    "bfloat16 needs no loss scaling: compare from a run whose scaler skips nothing (a lower "
    "GradScaler(init_scale=...) in the original), or with the scaler disabled on both sides (enabled=False)",
    ("numerics",), mention="GradScaler",
)
HALF_TO_BF16 = Cause(
    "the original autocasts to float16 and the migrated program to bfloat16 (the rewrite moved a CUDA float16 "
    "autocast to the neuron device's bfloat16): bfloat16 rounds to 8 bits of mantissa, float16 to 11, so a "
    "difference of this size is expected, not a migration bug",
    "compare with --rtol 5e-2, or with autocast off on both sides to check the float32 program",
    ("numerics",), mention="bfloat16",
)
HALF_TO_BF16_LARGE = Cause(
    "the original autocasts to float16 and the migrated program to bfloat16, but the difference is larger than "
    "their rounding explains (about 1e-2): the forward pass computes something else as well",
    "compare with autocast off on both sides: what still differs then is the migration's",
    ("numerics",), mention="bfloat16",
)
AUTOCAST_OFF_HERE = Cause(
    "autocast is on in the migrated program and off in the original, which ran on the CPU: a CUDA autocast "
    "(torch.autocast(\"cuda\"), torch.cuda.amp.autocast) does nothing without a GPU, so the original computed "
    "in float32",
    "record the original on a machine with a GPU (its autocast then runs), or compare with --rtol 5e-2",
    ("numerics",), mention="autocast",
)
TF32 = Cause(
    "the original ran its float32 matmuls in TF32 on the GPU ({switch}): TF32 rounds their inputs to 10 bits "
    "of mantissa, so values differ from the migrated side's float32 by about 1e-3; a difference of this size is "
    "expected",
    "record the original with TF32 off (torch.backends.cuda.matmul.allow_tf32 = False, "
    "torch.backends.cudnn.allow_tf32 = False, torch.set_float32_matmul_precision(\"highest\")), or compare with "
    "--rtol 1e-2",
    ("numerics",),
)
CUDNN_BENCHMARK = Cause(
    "the original ran with torch.backends.cudnn.benchmark = True: cuDNN picks each convolution's algorithm by "
    "timing it, so the GPU run sums in an order of its own (another one from run to run), and float32 results "
    "differ at rounding level, drifting over the steps",
    "record the original with torch.backends.cudnn.benchmark = False and torch.backends.cudnn.deterministic = "
    "True, or raise --rtol (1e-4 for a short run)",
    (),
)
GPU_ORDER = Cause(
    "the original ran on a GPU ({gpu}) and the migrated program elsewhere: their float32 kernels sum in other "
    "orders, so values differ at rounding level and drift over the steps (convolutions may also have run in TF32: "
    "torch.backends.cudnn.allow_tf32 is on by default)",
    "raise --rtol (1e-4 for a short run), or record the original with torch.backends.cudnn.allow_tf32 = False "
    "and torch.backends.cudnn.deterministic = True",
    (),
)


def cuda_cause(first: Mismatch, legacy: Record, migrated: Record) -> Cause | None:
    """The cause a CUDA original's own numerics explain, or None to fall back on the general causes. Only named
    when the difference is the size that cause makes: a wrong edit that makes a larger one is not excused."""
    what = first.key[0]
    if what == "batch" or first.reshaped:
        return None
    skipped = [event for event in legacy.of("skipped") if event["step"] <= first.step]
    if skipped:
        return replace(SCALER_SKIPPED, text=SCALER_SKIPPED.text.format(step=skipped[0]["step"],
                                                                      scale=skipped[0].get("scale") or 0))
    small = first.difference is not None and first.difference
    ours, theirs = _autocast_dtype(legacy, first.step), _autocast_dtype(migrated, first.step)
    if ours == "float16" and theirs == "bfloat16" or first.dtypes == ("float16", "bfloat16"):
        return HALF_TO_BF16 if small and small < EXPECTED_BF16 else HALF_TO_BF16_LARGE
    settings = _settings(legacy, first.step)
    if settings.get("device") != "cuda":
        if not ours and theirs and what in ("output", "loss") and legacy_device(legacy) == "cpu":
            return AUTOCAST_OFF_HERE
        return None
    if not small:
        return None
    matmul = settings.get("tf32_matmul") or settings.get("matmul_precision") in ("high", "medium")
    if matmul and small < EXPECTED_TF32:
        switch = ("torch.backends.cuda.matmul.allow_tf32 = True" if settings.get("tf32_matmul") else
                  f"torch.set_float32_matmul_precision(\"{settings.get('matmul_precision')}\")")
        return replace(TF32, text=TF32.text.format(switch=switch))
    if settings.get("cudnn_benchmark") and small < EXPECTED_ORDER:
        return CUDNN_BENCHMARK
    if small < EXPECTED_ORDER:
        return replace(GPU_ORDER, text=GPU_ORDER.text.format(gpu=settings.get("gpu") or "cuda"))
    return None


def _autocast_dtype(record: Record, step: int) -> str:
    return next((event["autocast_dtype"] for event in [*record.of("output"), *record.of("loss")]
                 if event["step"] == step and event.get("autocast_dtype")), "")


def _settings(record: Record, step: int) -> dict:
    """The backend switches in force at ``step``: the last written at or before it (or the first of all)."""
    written = record.of("settings")
    before = [event for event in written if event["step"] <= step]
    return before[-1] if before else written[0] if written else {}


def legacy_device(record: Record) -> str:
    """The device the original computed on: the one most of its recorded tensors were on."""
    devices = record.devices()
    return devices.most_common(1)[0][0] if devices else ""
