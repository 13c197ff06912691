"""NA7xx: the pieces of the Trainium recipe a stock Hugging Face script lacks, each with the fix ``rewrite
--from cuda`` applies (NM634 in the arguments, NM635 at start-up; generate()'s static cache is NA103)."""

from __future__ import annotations

import ast

from neuron_migrate.analyzers.static.base import FileScan, check, constant, keyword

# TrainingArguments and the TRL configs built on it (transformers 5.24, trl 1.16)
ARGUMENT_CLASSES = frozenset(
    {"TrainingArguments", "Seq2SeqTrainingArguments", "SFTConfig", "DPOConfig", "GRPOConfig", "KTOConfig",
     "RewardConfig", "RLOOConfig", "DistillationConfig"}
)
TRAINERS = frozenset(
    {"Trainer", "Seq2SeqTrainer", "SFTTrainer", "DPOTrainer", "GRPOTrainer", "KTOTrainer", "RewardTrainer",
     "RLOOTrainer"}
)
RECIPE_MAX_LENGTH = 2048
PRECISION = frozenset({"bf16", "fp16", "bf16_full_eval", "fp16_full_eval"})
# TRL's configs default bf16 to True unless fp16 is set (trl 1.16); transformers' arguments to False
TRANSFORMERS_ARGUMENTS = frozenset({"TrainingArguments", "Seq2SeqTrainingArguments"})


def _stock(scan: FileScan, node: ast.AST, names: frozenset[str]) -> str:
    """The class name when ``node`` names one of ``names`` of transformers or TRL, else ''."""
    qualified = scan.qualified(node)
    root, _, _ = qualified.partition(".")
    name = qualified.rsplit(".", 1)[-1]
    return name if root in ("transformers", "trl") and name in names else ""


@check(ast.Call)
def recipe_arguments(scan: FileScan, call: ast.Call):
    name = _stock(scan, call.func, ARGUMENT_CLASSES)
    if not name:
        return
    given = {kw.arg for kw in call.keywords}
    if None in given or given & {"use_cpu", "no_cuda"}:
        return  # a spread may hold the settings; a CPU run has no recipe
    if not any(arg.startswith("torch_compile") for arg in given if arg):
        yield "NA701", call, ""
    if constant(keyword(call, "fp16")) is True:
        yield "NA702", call, "fp16=True: the neuron device computes in bf16", "pass bf16=True instead of fp16=True"
    elif name in TRANSFORMERS_ARGUMENTS and not given & PRECISION:
        yield "NA702", call, "", "pass bf16=True (rewrite --from cuda adds it)"
    if name != "SFTConfig":
        return
    length = constant(keyword(call, "max_length"))
    if isinstance(length, int) and not isinstance(length, bool) and length > RECIPE_MAX_LENGTH:
        yield "NA704", call, f"max_length={length} is past {RECIPE_MAX_LENGTH}, the recipe's longest sequence"
    padding = keyword(call, "pad_to_multiple_of")
    if isinstance(padding, ast.Constant) and padding.value is None:
        yield "NA705", call, ""


def _trainer_built(scan: FileScan, node: ast.AST) -> bool:
    if isinstance(node, ast.Call):
        return bool(_stock(scan, node.func, TRAINERS))
    return any(_stock(scan, base, TRAINERS) for base in node.bases)


@check(ast.Call, ast.ClassDef)
def recipe_startup(scan: FileScan, node: ast.AST):
    """Tied to the first place the file builds (or subclasses) a trainer, once per file."""
    if scan.facts.get("recipe_startup") or not _trainer_built(scan, node):
        return
    scan.facts["recipe_startup"] = True
    if "HF_DEACTIVATE_ASYNC_LOAD" not in scan.source:
        yield "NA703", node, ""
    if "automatic_dynamic_shapes" not in scan.source and not scan.facts.get("na108"):
        scan.facts["na108"] = True
        yield (
            "NA108", node, "the Trainer compiles the model, and dynamo then tries dynamic graphs after a shape change",
            "set torch._dynamo.config.automatic_dynamic_shapes = False once at start-up (rewrite --from cuda adds it)",
        )
