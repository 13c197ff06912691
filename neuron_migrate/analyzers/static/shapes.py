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
    if constant(keyword(call, "padding_free")) is True:
        yield "NA106", call, "padding_free=True flattens each batch into one sequence of varying length"
        return
    strategy = constant(keyword(call, "packing_strategy"), "bfd")
    if constant(keyword(call, "packing")) is True and strategy in ("bfd", "bfd_split"):
        yield "NA106", call, f'packing=True with packing_strategy="{strategy}" turns padding-free batches on'


@check(ast.Call)
def ragged_last_batch(scan: FileScan, call: ast.Call):
    if last_name(call) != "DataLoader" or constant(keyword(call, "drop_last")) is True:
        return
    training = constant(keyword(call, "shuffle")) is True or keyword(call, "sampler") is not None
    if training:
        yield "NA107", call, ""


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
