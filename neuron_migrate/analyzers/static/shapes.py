"""NA1xx: code that makes input shapes vary, so the native backend compiles again and again."""

from __future__ import annotations

import ast

from neuron_migrate.analyzers.static.base import FileScan, check, constant, keyword, last_name, method_name

COLLATORS = frozenset(
    {
        "DataCollatorWithPadding",
        "DataCollatorForLanguageModeling",
        "DataCollatorForSeq2Seq",
        "DataCollatorForTokenClassification",
        "DataCollatorForCompletionOnlyLM",
        "DataCollatorForChatML",
    }
)
SFT_CONFIGS = frozenset({"SFTConfig", "NeuronSFTConfig"})
DYNAMIC_MARKS = frozenset({"torch._dynamo.mark_dynamic", "torch._dynamo.maybe_mark_dynamic"})
HF_WORDS = ("transformers", "optimum", "AutoModel", "generation_config")


@check(ast.Call)
def varying_padding(scan: FileScan, call: ast.Call):
    value = keyword(call, "padding")
    setting = constant(value, "")
    if value is None or not (setting is True or setting == "longest"):
        return
    if keyword(call, "pad_to_multiple_of") is None:
        yield "NA101", value, f"padding={setting!r} pads each batch to its own longest sequence"


@check(ast.Call)
def collator_padding(scan: FileScan, call: ast.Call):
    name = last_name(call)
    if name in COLLATORS and keyword(call, "pad_to_multiple_of") is None:
        yield "NA102", call, f"{name} pads each batch to its own longest sequence"


@check(ast.Call)
def generate_without_static_cache(scan: FileScan, call: ast.Call):
    if method_name(call) != "generate" or not _uses_hugging_face(scan):
        return
    if keyword(call, "cache_implementation") is not None or keyword(call, "past_key_values") is not None:
        return
    if "cache_implementation" in scan.source:
        return
    yield "NA103", call, ""


@check(ast.Call)
def compile_settings(scan: FileScan, call: ast.Call):
    if scan.callee(call) != "torch.compile":
        return
    _note_compile(scan, call)
    if constant(keyword(call, "dynamic")) is True:
        yield "NA104", call, ""
    mode = keyword(call, "mode")
    if mode is not None and constant(mode) not in (None, "default"):
        yield "NA105", call, f"mode={ast.unparse(mode)} is ignored on neuron"
    if not _sets_dynamic_shapes(scan):
        yield "NA108", call, ""


@check(ast.Call)
def trainer_compile(scan: FileScan, call: ast.Call):
    if constant(keyword(call, "torch_compile")) is True and not _sets_dynamic_shapes(scan):
        yield "NA108", call, "the Trainer compiles the model, and dynamo then tries dynamic graphs after a shape change"


@check(ast.Call)
def bfd_packing(scan: FileScan, call: ast.Call):
    if last_name(call) not in SFT_CONFIGS:
        return
    padding_free = keyword(call, "padding_free")
    if _may_be_true(padding_free):
        yield "NA106", call, _when_true(padding_free, "padding_free", "flattens each batch into one sequence of varying length")
        return
    packing = keyword(call, "packing")
    strategy = constant(keyword(call, "packing_strategy"), "bfd")
    if _may_be_true(packing) and strategy in ("bfd", "bfd_split"):
        yield "NA106", call, _when_true(packing, "packing", f'with packing_strategy="{strategy}" turns padding-free batches on')


@check(ast.Call)
def ragged_last_batch(scan: FileScan, call: ast.Call):
    """Every batching DataLoader whose last batch may be smaller: training and evaluation alike compile a graph
    for it. Batch size 1 (the default), ``batch_size=None`` and a ``batch_sampler`` have no ragged batch."""
    if last_name(call) != "DataLoader" or keyword(call, "batch_sampler") is not None:
        return
    size = keyword(call, "batch_size") or (call.args[1] if len(call.args) > 1 else None)
    if size is None or (isinstance(size, ast.Constant) and size.value in (None, 1)):
        return
    drop_last = keyword(call, "drop_last") or (call.args[8] if len(call.args) > 8 else None)
    if drop_last is None or constant(drop_last) is False:
        yield "NA107", call, ""
    elif not isinstance(drop_last, ast.Constant):
        yield "NA107", call, f"drop_last={ast.unparse(drop_last)}: when it is False, the last, smaller batch compiles a graph of its own"


def _may_be_true(value: ast.AST | None) -> bool:
    """A literal True, or a value only known at run time (``packing=args.packing``)."""
    return value is not None and (constant(value) is True or not isinstance(value, ast.Constant))


def _when_true(value: ast.AST, name: str, what: str) -> str:
    if isinstance(value, ast.Constant):
        return f"{name}=True {what}"
    return f"{name}={ast.unparse(value)} {what} when it is true"


@check(ast.Call)
def marked_dynamic(scan: FileScan, call: ast.Call):
    if scan.callee(call) in DYNAMIC_MARKS:
        yield "NA109", call, ""


def _uses_hugging_face(scan: FileScan) -> bool:
    if "hf" not in scan.facts:
        scan.facts["hf"] = any(word in scan.source for word in HF_WORDS)
    return bool(scan.facts["hf"])


def _sets_dynamic_shapes(scan: FileScan) -> bool:
    """Reported once per file: the first compile site stands for all of them."""
    if "automatic_dynamic_shapes" in scan.source or scan.facts.get("na108"):
        return True
    scan.facts["na108"] = True
    return False


def _note_compile(scan: FileScan, call: ast.Call) -> None:
    scan.facts["compiles"] = True
