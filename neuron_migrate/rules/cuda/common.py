"""What the CUDA rules share: their base class, the accelerator expressions and the "cuda" strings."""

from __future__ import annotations

import re

import libcst as cst

from neuron_migrate import markers
from neuron_migrate.rules.base import Rule

DOCS_ACCELERATOR = "https://docs.pytorch.org/docs/stable/accelerator.html"
DOCS_DISTRIBUTED = "https://docs.pytorch.org/docs/stable/distributed.html"
DOCS_AMP = "https://docs.pytorch.org/docs/stable/amp.html"
DOCS_TORCH_NEURON = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html"
DOCS_BF16 = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/appnotes/torch-neuronx/"
    "migration-from-xla-downcast-bf16.html"
)

# "cuda" and "cuda:N", the device strings of CUDA code
CUDA_STRING = re.compile(r"cuda(?::(\d+))?")


def legacy_owned(ctx, rule_id: str) -> bool:
    """Is this XLA code, whose CUDA-named API a legacy rule (``rule_id``) answers? It is while the file imports
    torch_xla, and after a rewrite removed those imports the legacy rule's marker (TODO or review) says so: a
    rerun must not answer the same call a second way."""
    return ctx.has_legacy_imports or markers.mentions(ctx.text, rule_id)


class CudaRule(Rule):
    """A rule of CUDA code: it runs with ``--from cuda`` only."""

    source = "cuda"


def nodes(root: cst.CSTNode):
    """``root`` and every node under it (the module-wide facts of the CUDA rules read them all once)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child for child in node.children if isinstance(child, cst.CSTNode))


def cuda_string(node: cst.CSTNode | None) -> re.Match | None:
    """The match of a plain ``"cuda"`` / ``"cuda:N"`` string literal, else None."""
    if not isinstance(node, cst.SimpleString) or node.prefix.lower() not in ("", "u"):
        return None
    return CUDA_STRING.fullmatch(node.evaluated_value)


def accelerator(ctx) -> str:
    """The expression of the accelerator's device (``torch.device("neuron")`` on Trainium, ``cuda`` on a GPU)."""
    return f"{ctx.require_import('torch')}.accelerator.current_accelerator()"


def accelerator_type(ctx) -> str:
    """The accelerator's device type as a string ("neuron", "cuda")."""
    return f"{accelerator(ctx)}.type"


def device_expression(ctx, match: re.Match) -> str:
    """What a ``"cuda"`` / ``"cuda:N"`` device becomes: the accelerator, or its device number N."""
    if match.group(1) is None:
        return accelerator(ctx)
    return f"{ctx.require_import('torch')}.device({accelerator_type(ctx)}, {match.group(1)})"


def accelerator_name(ctx) -> str:
    """The accelerator's device type as a string that is safe to compute early (a default, a module-level
    setting): ``str()`` of the device gives "neuron" or "cuda", and "None" rather than an error where there is
    no accelerator, so a script still imports, and fails at first use as a "cuda" string did."""
    return f"str({accelerator(ctx)})"


def string_expression(ctx, match: re.Match) -> str:
    """What a ``"cuda"`` / ``"cuda:N"`` string held where a string is kept becomes: the accelerator's name."""
    if match.group(1) is None:
        return accelerator_name(ctx)
    return f'f"{{{accelerator(ctx)}}}:{match.group(1)}"'


DOCS_HF_DEVICE_MAP = "https://huggingface.co/docs/accelerate/concept_guides/big_model_inference"
DOCS_HF_QUANTIZATION = "https://huggingface.co/docs/transformers/main/en/quantization/bitsandbytes"
DOCS_DISTRIBUTED_CONFIG = "https://huggingface.co/docs/transformers/main/en/perf_infer_gpu_multi"
DOCS_HF_TRAINING_ARGS = "https://huggingface.co/docs/transformers/main_classes/trainer#transformers.TrainingArguments"
DOCS_HF_ATTENTION = "https://huggingface.co/docs/transformers/attention_interface"
DOCS_NKI = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/index.html"


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    """The ``name=...`` argument of ``call``, if it has one."""
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def is_true(node: cst.CSTNode | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def is_false(node: cst.CSTNode | None) -> bool:
    return isinstance(node, cst.Name) and node.value in ("False", "None")


def string_value(node: cst.CSTNode | None) -> str | None:
    """The text of a plain string literal, else None."""
    if isinstance(node, cst.SimpleString) and node.prefix.lower() in ("", "u"):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None
