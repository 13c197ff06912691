"""NM309: a model loaded from a pre-compiled aws-neuron Hub repository"""

from __future__ import annotations

import re

import libcst as cst

from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import literal
from neuron_migrate.rules.optimum_inference.common import DOCS_WHAT_CHANGES, PRECOMPILED_ORG

ORG = PRECOMPILED_ORG
# Libraries whose loaders read a Hub repository: from_pretrained of their classes, and their factories.
LOADER_LIBRARIES = ("transformers", "diffusers", "optimum", "sentence_transformers", "peft")
# Classes that read only a repository's config or tokenizer files, which a compiled repository keeps.
KEEPS_WORKING = re.compile(r"Tokenizer|Processor|FeatureExtractor|Config$")
# factory's qualified-name ending -> (position, keyword) of its model argument
FACTORIES = {
    ".pipeline": (1, "model"),
    ".SentenceTransformer": (0, "model_name_or_path"),
}
MODEL_KEYWORDS = ("pretrained_model_name_or_path", "model_id", "model_name_or_path")
# A compiled repository is named after its source model, then what it was compiled for
# ("-seqlen-2048-bs-1", "-neuron-latency", "-1024x1024", "-optimum-0-0-23"): those parts come off.
COMPILE_SUFFIX = re.compile(
    r"(?:[-_](?:seqlen|sl|bs|batch|tp|nc|cores?|budget)-?\d+|[-_]neuronx?|[-_](?:latency|throughput)|[-_]inf[12]"
    r"|[-_]trn[123]|[-_]\d*xlarge|[-_]optimum(?:-\d+)+|[-_]\d+x\d+|[-_]?sharded|[-_]compiled)$",
    re.IGNORECASE,
)
# Where the source models of those names live, by how the name starts (lowercase). A repository
# name cannot tell a dot from a dash, so the names that had one are listed whole.
SOURCE_REPOSITORIES = {
    "bge-base-en-v1-5": "BAAI/bge-base-en-v1.5",
    "bge-large-en-v1-5": "BAAI/bge-large-en-v1.5",
    "bge-small-en-v1-5": "BAAI/bge-small-en-v1.5",
    "stable-diffusion-xl-base-1-0": "stabilityai/stable-diffusion-xl-base-1.0",
    "stable-diffusion-2-1": "stabilityai/stable-diffusion-2-1",
    "stable-diffusion-2-1-base": "stabilityai/stable-diffusion-2-1-base",
}
SOURCE_ORGS = (
    ("llama-2-", "meta-llama"),
    ("meta-llama-3-", "meta-llama"),
    ("codellama-", "codellama"),
    ("mistral-7b-", "mistralai"),
    ("mixtral-8x7b-", "mistralai"),
    ("zephyr-7b-", "HuggingFaceH4"),
    ("qwen2", "Qwen"),
    ("qwen3", "Qwen"),
)


def source_model(repository: str) -> str | None:
    """The Hub id of the model ``aws-neuron/<name>`` was compiled from, when its name says it."""
    stem = repository[len(ORG) :]
    while True:
        shorter = COMPILE_SUFFIX.sub("", stem)
        if shorter == stem:
            break
        stem = shorter
    if stem.lower() in SOURCE_REPOSITORIES:
        return SOURCE_REPOSITORIES[stem.lower()]
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", stem):
        return None
    for start, org in SOURCE_ORGS:
        if stem.lower().startswith(start):
            return f"{org}/{stem}"
    return None


def next_step(repository: str | None) -> str:
    source = source_model(repository) if repository else None
    where = f"`{repository}`" if repository else "this aws-neuron repository"
    text = (
        f"{where} holds a model compiled for the legacy Neuron SDK (a neuron config and compiled graphs), "
        "not weights to load here: load the model it was compiled from"
    )
    if source:
        return f"{text}, `{source}` going by its name (its model card says for sure)"
    return f"{text} (its model card names it)"


class _Sites(cst.CSTVisitor):
    """The loading calls of the file whose repository is an aws-neuron one, and the strings
    assigned once to a name (a repository id kept in a variable)."""

    def __init__(self, ctx) -> None:
        super().__init__()
        self.ctx = ctx
        self.strings: dict[str, cst.BaseExpression | None] = {}  # name -> its one value (None: several)
        self.candidates: list[tuple[cst.Call, cst.BaseExpression]] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.strings[target.value] = None if target.value in self.strings else value

    def visit_Call(self, node: cst.Call) -> None:
        model = self._model_argument(node)
        if model is not None:
            self.candidates.append((node, model))

    def _model_argument(self, call: cst.Call) -> cst.BaseExpression | None:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "from_pretrained":
            owners = self.ctx.qualified.imported(func.value)
            if not any(_is_loader_class(name) for name in owners):
                return None
            return _argument(call, 0, MODEL_KEYWORDS)
        for name in self.ctx.qualified.imported(func):
            for ending, (position, keyword) in FACTORIES.items():
                if name.endswith(ending) and name.split(".")[0] in LOADER_LIBRARIES:
                    return _argument(call, position, (keyword,))
        return None

    def repository(self, expr: cst.BaseExpression) -> tuple[bool, str | None]:
        """(whether ``expr`` names an aws-neuron repository, the repository when it is spelled out)."""
        if isinstance(expr, cst.Name) and self.strings.get(expr.value) is not None:
            expr = self.strings[expr.value]
        value = literal(expr)
        if isinstance(value, str):
            return value.startswith(ORG), value.strip() if value.startswith(ORG) else None
        if isinstance(expr, cst.FormattedString) and expr.parts:
            first = expr.parts[0]
            return isinstance(first, cst.FormattedStringText) and first.value.startswith(ORG), None
        return False, None


def _is_loader_class(qname: str) -> bool:
    parts = qname.split(".")
    return parts[0] in LOADER_LIBRARIES and not KEEPS_WORKING.search(parts[-1])


def _argument(call: cst.Call, position: int, keywords: tuple[str, ...]) -> cst.BaseExpression | None:
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in keywords:
            return arg.value
    return positional[position].value if len(positional) > position else None


@register
class PrecompiledHubModel(Rule):
    """``from_pretrained("aws-neuron/...")`` / ``pipeline(task, "aws-neuron/...")``: the aws-neuron Hub
    organisation publishes models compiled by optimum-neuron for the legacy Neuron SDK (a
    ``neuron_config.json`` and NEFF graphs; the weights, when there, sit in a ``checkpoint/`` folder).
    TorchNeuron compiles the stock model as it runs (Neuron docs: what changes), so the load must
    name the model that was compiled."""

    meta = RuleMeta(
        "NM309",
        "model loaded from a pre-compiled aws-neuron Hub repository",
        safety=MANUAL,
        risks=frozenset({"checkpoint-format"}),
        summary=(
            "A from_pretrained / pipeline / SentenceTransformer call of transformers, diffusers, optimum-neuron, "
            "sentence-transformers or PEFT whose repository is an aws-neuron/... one (written there, or in a "
            "variable assigned once) gets a TODO: such a repository holds a model compiled for the legacy "
            "Neuron SDK. The marker names the source model when the repository's name says it."
        ),
        docs=(DOCS_WHAT_CHANGES,),
        triggers=(ORG.encode(),),
        example=Example(
            before=(
                "from transformers import AutoModelForCausalLM\n\n"
                'model = AutoModelForCausalLM.from_pretrained("aws-neuron/Llama-2-7b-chat-hf-seqlen-2048-bs-1")\n'
            ),
            after=(
                "from transformers import AutoModelForCausalLM\n\n"
                f"# TODO(neuron-migrate NM309): {next_step('aws-neuron/Llama-2-7b-chat-hf-seqlen-2048-bs-1')}\n"
                'model = AutoModelForCausalLM.from_pretrained("aws-neuron/Llama-2-7b-chat-hf-seqlen-2048-bs-1")\n'
            ),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.sites: dict[int, str | None] = {}
        if ORG not in self.ctx.text:
            return
        scan = _Sites(self.ctx)
        node.visit(scan)
        for call, model in scan.candidates:
            named, repository = scan.repository(model)
            if named:
                self.sites[id(call)] = repository

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        if not self.sites or id(original) not in self.sites:
            return updated
        self.ctx.manual(self.meta, original, next_step(self.sites[id(original)]))
        return updated
