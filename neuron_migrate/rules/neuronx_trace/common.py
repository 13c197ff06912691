"""What the neuronx_trace rules share: helpers, constants and base classes."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from neuron_migrate.migrate.context import FileContext, code_of, root_name
from neuron_migrate.rules.base import Fact, Rule
from neuron_migrate.rules.calls import literal
from neuron_migrate.rules.neuronx_trace.project_artifacts import NOT_PROBE
from neuron_migrate.rules.xla_step.common import source_text

NEURON_DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest"
DOCS_COMPILE = f"{NEURON_DOCS}/torch/compile/reference-torch-compile.html"
DOCS_ENV = f"{NEURON_DOCS}/torch/reference/env-vars.html"
DOCS_MODULE = f"{NEURON_DOCS}/torch/reference/api/torch-neuron-module.html"
DOCS_DISTRIBUTED = f"{NEURON_DOCS}/torch/guides/torch-distributed.html"
DOCS_BEST_PRACTICES = f"{NEURON_DOCS}/torch/reference/best-practices-pytorch-neuron.html"
DOCS_NATIVE_FAQ = f"{NEURON_DOCS}/archive/frameworks/torch/pytorch-native-overview.html"
DOCS_NO_XLA_INFERENCE = (
    f"{NEURON_DOCS}/about-neuron/announcements/neuron2.x/announce-no-support-torch-xla-inference-trn.html"
)
TRIGGERS = (b"torch_neuronx",)
TRACE = frozenset({"torch_neuronx.trace", "torch_neuronx.xla_impl.trace.trace"})
COMPILE_LATER = 'torch.compile(model.to("neuron").eval(), backend="neuron", fullgraph=True)'
# Traces whose result scripts save: torch_neuronx's, and neuronx_distributed's (NM431 marks the trace).
NXD_TRACE = frozenset(
    {"neuronx_distributed.trace.parallel_model_trace", "neuronx_distributed.trace.trace.parallel_model_trace"}
)
NEFF_CACHE = "the NEFF cache (TORCH_NEURONX_NEFF_CACHE_DIR) keeps the compile work"


# ----- the legacy uses of a file, found once -----------------------------------------------------


@dataclass(frozen=True)
class LegacyUse:
    """One use of a legacy name: ``node`` is the call when the name is called, else the reference."""

    node: cst.CSTNode
    qname: str


class _LegacyUses(cst.CSTVisitor):
    """The outermost references to names under ``prefixes``, in file order (imports left out)."""

    def __init__(self, ctx: FileContext, prefixes: tuple[str, ...]) -> None:
        super().__init__()
        self.ctx = ctx
        self.prefixes = prefixes
        self.found: dict[int, LegacyUse] = {}
        self.callees: set[int] = set()

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        qname = self._legacy_name(node.func)
        if qname:
            self.found[id(node)] = LegacyUse(node, qname)
            self.callees.add(id(node.func))

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return self._reference(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._reference(node)

    def _reference(self, node: cst.CSTNode) -> bool:
        if id(node) in self.callees:
            return False
        qname = self._legacy_name(node)
        if qname:
            self.found[id(node)] = LegacyUse(node, qname)
            return False
        return True

    def _legacy_name(self, node: cst.CSTNode) -> str | None:
        if not root_name(node):
            return None
        for qname in sorted(self.ctx.qualified_names(node)):
            if any(qname == p or qname.startswith(p + ".") for p in self.prefixes):
                return qname
        return None


def legacy_uses(ctx: FileContext, prefixes: tuple[str, ...]) -> dict[int, LegacyUse]:
    """id(node) -> use, for every use of a name under ``prefixes`` in the file (computed once)."""
    return ctx.fact(_legacy_uses_fact(prefixes))


@functools.cache
def _legacy_uses_fact(prefixes: tuple[str, ...]) -> Fact[dict[int, LegacyUse]]:
    def find(ctx: FileContext) -> dict[int, LegacyUse]:
        if not any(p.split(".")[0] in source_text(ctx) for p in prefixes):
            return {}
        finder = _LegacyUses(ctx, prefixes)
        ctx.module.visit(finder)
        return finder.found

    return Fact(f"legacy_uses{prefixes}", find)


class LegacyUseRule(Rule):
    """Base of rules that answer every use of a legacy package whatever the import path: the engine
    tables need exact names, these rules see each outermost use once (a call, or a bare reference
    such as ``isinstance(m, ColumnParallelLinear)``) and pass it to :meth:`handle_use`."""

    prefixes: ClassVar[tuple[str, ...]] = ()

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        return self._dispatch(original, updated)

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute):
        return self._dispatch(original, updated)

    def leave_Name(self, original: cst.Name, updated: cst.Name):
        return self._dispatch(original, updated)

    def _dispatch(self, original, updated):
        use = legacy_uses(self.ctx, self.prefixes).get(id(original))
        if use is None:
            return updated
        return self.handle_use(original, updated, use)

    def handle_use(self, original, updated, use: LegacyUse):
        raise NotImplementedError


def one_line(node: cst.CSTNode, limit: int = 40) -> str | None:
    """The code of ``node`` when it is short enough to quote in a one-line marker."""
    text = code_of(node).strip()
    return text if "\n" not in text and len(text) <= limit else None


# ----- NM401: torch_neuronx.trace -> torch.compile ------------------------------------------------

MOVE_INPUTS = 'move the inputs to "neuron"'
TRACE_PARAMS = (
    "func",
    "example_inputs",
    "compiler_args",
    "compiler_workdir",
    "inline_weights_to_neff",
    "partitioner_config",
    "cpu_backend",
    "input_output_aliases",
)
# Arguments with nothing to set on TorchNeuron, and why (said in the report, not in the marker).
DROPPED_SILENTLY = {
    "inline_weights_to_neff": "weights stay module parameters, never baked into the compiled graph",
    "partitioner_config": "ops the device cannot run fall back to the CPU on their own",
    "cpu_backend": "compilation needs the device; there is no CPU-only compile",
    "input_output_aliases": "torch.compile decides buffer reuse itself",
}


class _FunctionNames(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.names.add(node.name.value)


def _function_names(ctx: FileContext) -> set[str]:
    finder = _FunctionNames()
    ctx.module.visit(finder)
    return finder.names


FUNCTION_NAMES = Fact("function_names", _function_names)


def function_names(ctx: FileContext) -> set[str]:
    """Names the file defines with ``def``: traced plain functions, not modules."""
    return ctx.fact(FUNCTION_NAMES)


def compiler_flags(arg: cst.Arg) -> str:
    value = literal(arg.value)
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(flag, str) for flag in value):
        return " ".join(value)
    return ""


# ----- NM402: saved and loaded traced models -------------------------------------------------------


def save_step(module: str) -> str:
    """The next step at a save of a traced model; ``module`` is the code of the module traced, if known."""
    weights = f"`torch.save({module}.state_dict(), path)`" if module else "its state_dict with `torch.save`"
    return (
        f"this saved the traced model; TorchNeuron has no serialized compiled model: save the weights "
        f"({weights}, or `save_pretrained` for a Hugging Face model) and torch.compile the rebuilt model "
        f"where it is loaded; {NEFF_CACHE}"
    )


def load_step(evidence: str) -> str:
    """The next step at a load of a traced model; ``evidence`` says why the file is one."""
    return (
        f"this loads a traced Neuron model ({evidence}), which TorchNeuron cannot run: build the model, load "
        f'its weights (`load_state_dict` / `from_pretrained`), `.to("neuron")` and torch.compile it at '
        f"start-up; {NEFF_CACHE}"
    )


class _TracedNames(cst.CSTVisitor):
    """Code of every assignment target whose value is a trace, and the code of the module traced."""

    def __init__(self, ctx: FileContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.names: dict[str, str] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        module = traced_module(self.ctx, node.value)
        if module is not None:
            self.names.update((code_of(target.target).strip(), module) for target in node.targets)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        module = traced_module(self.ctx, node.value) if node.value is not None else None
        if module is not None:
            self.names[code_of(node.target).strip()] = module


def traced_module(ctx: FileContext, value: cst.BaseExpression) -> str | None:
    """The code of the module ``value`` traces (``""`` when it does not say), or None when it is no
    trace: ``torch_neuronx.trace(model, x)``, ``parallel_model_trace(...)``, an NxD ``builder.trace()`` or
    ``builder.compile()`` in a file that imports neuronx_distributed, or what NM401 made of a trace,
    ``torch.compile(model.to("neuron").eval(), backend="neuron")`` (a compiled module is no file either)."""
    if not isinstance(value, cst.Call):
        return None
    is_trace = ctx.any_qualified_name(value.func, TRACE | NXD_TRACE) or _builder_trace(ctx, value)
    if not is_trace and not _neuron_compile(ctx, value):
        return None
    first = value.args[0].value if value.args and value.args[0].keyword is None else None
    while (
        isinstance(first, cst.Call) and isinstance(first.func, cst.Attribute) and first.func.attr.value in ("eval", "to")
    ):
        first = first.func.value
    return code_of(first).strip() if isinstance(first, (cst.Name, cst.Attribute)) else ""


def _neuron_compile(ctx: FileContext, call: cst.Call) -> bool:
    backend = next((arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == "backend"), None)
    return literal(backend) == "neuron" and bool(ctx.any_qualified_name(call.func, {"torch.compile"}))


def _builder_trace(ctx: FileContext, call: cst.Call) -> bool:
    """``builder.trace(...)`` or ``builder.compile()`` on an NxD ModelBuilder, whose result scripts save
    and load back (NM431 marks the builder itself)."""
    return (
        isinstance(call.func, cst.Attribute)
        and call.func.attr.value in ("trace", "compile")
        and not ctx.qualified_names(call.func)
        and imports_neuron_package(ctx, "neuronx_distributed")
    )


def _traced_names(ctx: FileContext) -> dict[str, str]:
    finder = _TracedNames(ctx)
    ctx.module.visit(finder)
    return finder.names


TRACED_NAMES = Fact("traced_names", _traced_names)


def traced_names(ctx: FileContext) -> dict[str, str]:
    """Code of each name or attribute a trace is assigned to -> the code of the module traced."""
    return ctx.fact(TRACED_NAMES)


_IMPORTS = Fact(
    "imported_neuron_packages",
    lambda ctx: set(
        re.findall(
            rf"^\s*(?:import|from)\s+(torch_neuronx|neuronx_distributed)\b{NOT_PROBE}", source_text(ctx), re.MULTILINE
        )
    ),
)


def imports_neuron_package(ctx: FileContext, package: str) -> bool:
    """Whether the file imports ``package`` (torch_neuronx, neuronx_distributed), anywhere in it."""
    return package in ctx.fact(_IMPORTS)


# ----- NM407: data_parallel.device_count -> torch.neuron.device_count --------------------------------

DEVICE_COUNT = "torch_neuronx.xla_impl.data_parallel.device_count"
# ----- NM410: torch_neuronx.distributed on the XLA stack ------------------------------------------

# What TorchNeuron's own torch_neuronx.distributed provides: the "neuron" process-group backend,
# registered by `import torch_neuronx`.
NATIVE_DISTRIBUTED = ("torch_neuronx.distributed.backend",)
XLA_DISTRIBUTED = (
    'XLA-era torch_neuronx.distributed; use stock torch.distributed on the neuron process group: '
    '`dist.init_process_group("neuron")`, then DDP, FSDP2 `fully_shard` or DTensor'
)
