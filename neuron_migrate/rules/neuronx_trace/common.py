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
# What every marker about a saved or loaded traced model tells the reader to do instead.
RECOMPILE = (
    "TorchNeuron has no serialized compiled model: rebuild the model, `.to(\"neuron\")` and torch.compile it "
    "at start-up; the NEFF cache (TORCH_NEURONX_NEFF_CACHE_DIR) keeps the compile work"
)


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


IMPORTS_TORCH_NEURONX = Fact(
    "imports_torch_neuronx",
    lambda ctx: bool(re.search(r"^\s*(?:import|from)\s+torch_neuronx\b", source_text(ctx), re.MULTILINE)),
)


def imports_torch_neuronx(ctx: FileContext) -> bool:
    return ctx.fact(IMPORTS_TORCH_NEURONX)


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


class _TracedNames(cst.CSTVisitor):
    """Code of every assignment target whose value is a ``torch_neuronx.trace`` call."""

    def __init__(self, ctx: FileContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.names: set[str] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._is_trace(node.value):
            self.names.update(code_of(target.target) for target in node.targets)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None and self._is_trace(node.value):
            self.names.add(code_of(node.target))

    def _is_trace(self, value: cst.BaseExpression) -> bool:
        return isinstance(value, cst.Call) and bool(self.ctx.any_qualified_name(value.func, TRACE))


def _traced_names(ctx: FileContext) -> set[str]:
    finder = _TracedNames(ctx)
    ctx.module.visit(finder)
    return finder.names


TRACED_NAMES = Fact("traced_names", _traced_names)


def traced_names(ctx: FileContext) -> set[str]:
    return ctx.fact(TRACED_NAMES)


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
