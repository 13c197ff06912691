"""torch-neuronx's XLA-era APIs: ahead-of-time tracing, its saved artifacts and the helpers around them.

``torch_neuronx.trace`` compiled a model for fixed example inputs into a TorchScript module holding a
NEFF, which scripts saved with ``torch.jit.save`` and loaded back with ``torch.jit.load``. On
TorchNeuron the model runs on device ``"neuron"`` and ``torch.compile(backend="neuron")`` compiles it
on its first call; there is no serialized compiled artifact, the NEFF cache keeps the compile work.
The rest of the XLA-era surface (DataParallel, analyze, weight loading helpers, core placement,
``xla_impl``) has no counterpart and gets a marker with the stock-PyTorch way to do the same thing.

``import torch_neuronx`` itself is not legacy: TorchNeuron ships under the same package name.

Sources: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html
and the torch-neuronx trace API reference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from neuron_migrate import rules as rule_families
from neuron_migrate.migrate.context import FileContext, code_of, root_name
from neuron_migrate.rules.base import MANUAL, REVIEW, SAFE, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import bind_args, first_argument, literal, receiver
from neuron_migrate.rules.rows import Manual, row_for
from neuron_migrate.rules.tables.neuronx_trace import (
    ANALYZE,
    CORE_PLACEMENT,
    DATA_PARALLEL,
    LEGACY_PARTS,
    LIBNEURONXLA,
    LIBNEURONXLA_OTHER,
    NKI,
    ROWS,
    TRACED_MODEL_HELPERS,
)
from neuron_migrate.rules.xla_step import source_text

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
    key = ("legacy_uses", prefixes)
    if key not in ctx.facts:
        uses: dict[int, LegacyUse] = {}
        roots = {p.split(".")[0] for p in prefixes}
        if any(root in source_text(ctx) for root in roots):
            finder = _LegacyUses(ctx, prefixes)
            ctx.module.visit(finder)
            uses = finder.found
        ctx.facts[key] = uses
    return ctx.facts[key]  # type: ignore[return-value]


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


def imports_torch_neuronx(ctx: FileContext) -> bool:
    if "imports_torch_neuronx" not in ctx.facts:
        ctx.facts["imports_torch_neuronx"] = bool(
            re.search(r"^\s*(?:import|from)\s+torch_neuronx\b", source_text(ctx), re.MULTILINE)
        )
    return bool(ctx.facts["imports_torch_neuronx"])


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


def function_names(ctx: FileContext) -> set[str]:
    """Names the file defines with ``def``: traced plain functions, not modules."""
    if "function_names" not in ctx.facts:
        finder = _FunctionNames()
        ctx.module.visit(finder)
        ctx.facts["function_names"] = finder.names
    return ctx.facts["function_names"]  # type: ignore[return-value]


def compiler_flags(arg: cst.Arg) -> str:
    value = literal(arg.value)
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(flag, str) for flag in value):
        return " ".join(value)
    return ""


@register
class TraceToCompile(Rule):
    """``torch_neuronx.trace(model, example_inputs)`` -> ``torch.compile(model.to("neuron").eval(),
    backend="neuron", fullgraph=True)``: the Neuron torch.compile reference (DOCS_COMPILE) names
    the backend, fullgraph and the static-shape rule; compile flags move to NEURON_CC_FLAGS and the
    debug folder to TORCH_NEURONX_DEBUG_DIR (DOCS_ENV)."""

    meta = RuleMeta(
        "NM401",
        'torch_neuronx.trace -> torch.compile(backend="neuron")',
        safety=REVIEW,
        risks=frozenset({"performance", "numerics"}),
        summary=(
            "The model moves to the neuron device and is compiled on its first call instead of being traced "
            "ahead of time; every new input shape compiles again. compiler_args become NEURON_CC_FLAGS."
        ),
        docs=(DOCS_COMPILE, DOCS_ENV, DOCS_NO_XLA_INFERENCE),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import torch\n"
                "import torch_neuronx\n\n"
                "model = build_model()\n"
                "example = torch.rand(1, 3, 224, 224)\n"
                'neuron_model = torch_neuronx.trace(model, example, compiler_args="--auto-cast none")\n'
            ),
            after=(
                "import torch\n"
                "import torch_neuronx\n\n"
                "model = build_model()\n"
                "example = torch.rand(1, 3, 224, 224)\n"
                "# neuron-migrate(NM401): compiled on first call; keep the example inputs' shapes (`example`) "
                'static: every new shape recompiles; move the inputs to "neuron"; compiler_args dropped: '
                'set NEURON_CC_FLAGS="--auto-cast none" if still needed\n'
                'neuron_model = torch.compile(model.to("neuron").eval(), backend="neuron", fullgraph=True)\n'
            ),
        ),
    )
    calls = {qname: "to_compile" for qname in TRACE}
    references = {qname: "manual_reference" for qname in TRACE}

    def to_compile(self, original: cst.Call, updated: cst.Call, qname: str):
        bound = bind_args(updated, TRACE_PARAMS)
        positional = sum(1 for arg in updated.args if arg.keyword is None)
        if bound is None or "func" not in bound or positional > 2:
            self.ctx.manual(original, f"compile the model instead: `{COMPILE_LATER}`")
            return updated
        torch = self.ctx.require_import("torch")
        target = self._compiled_target(bound["func"].value)
        self.ctx.review("; ".join(self._review_notes(bound)))
        dropped = [f"{name} ({why})" for name, why in DROPPED_SILENTLY.items() if name in bound]
        note = "traced model -> torch.compile on the neuron device"
        self.ctx.note(note + (f"; dropped {', '.join(dropped)}" if dropped else ""))
        return self.ctx.expr(f'{torch}.compile({target}, backend="neuron", fullgraph=True)')

    def manual_reference(self, original: cst.CSTNode, updated: cst.CSTNode, qname: str):
        self.ctx.manual(original, f"call torch.compile where this is used: `{COMPILE_LATER}`")
        return updated

    def _compiled_target(self, func: cst.BaseExpression) -> str:
        """``model.to("neuron").eval()`` for a module; a plain function is compiled as it is."""
        if isinstance(func, cst.Lambda) or (isinstance(func, cst.Name) and func.value in function_names(self.ctx)):
            return code_of(func)
        # ``trace(model.eval(), x)``: the replacement calls .eval() itself.
        if (
            isinstance(func, cst.Call)
            and not func.args
            and isinstance(func.func, cst.Attribute)
            and func.func.attr.value == "eval"
        ):
            func = func.func.value
        return f'{receiver(func)}.to("neuron").eval()'

    @staticmethod
    def _review_notes(bound: dict[str, cst.Arg]) -> list[str]:
        example = bound.get("example_inputs")
        shown = one_line(example.value) if example is not None else None
        inputs = f"the example inputs' shapes (`{shown}`)" if shown else "the example inputs' shapes"
        notes = [f"compiled on first call; keep {inputs} static: every new shape recompiles; {MOVE_INPUTS}"]
        if "compiler_args" in bound:
            flags = compiler_flags(bound["compiler_args"])
            setting = f'set NEURON_CC_FLAGS="{flags}"' if flags else "put its flags in NEURON_CC_FLAGS"
            notes.append(f"compiler_args dropped: {setting} if still needed")
        if "compiler_workdir" in bound:
            notes.append("compiler_workdir dropped: set TORCH_NEURONX_DEBUG_DIR to keep compiler artifacts")
        return notes


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


def traced_names(ctx: FileContext) -> set[str]:
    if "traced_names" not in ctx.facts:
        finder = _TracedNames(ctx)
        ctx.module.visit(finder)
        ctx.facts["traced_names"] = finder.names
    return ctx.facts["traced_names"]  # type: ignore[return-value]


@register
class TracedArtifacts(Rule):
    """``torch.jit.save`` of a traced model and ``torch.jit.load`` of one: a traced Neuron model was a
    TorchScript file holding a NEFF; TorchNeuron compiles at run time and keeps compiled graphs in the
    NEFF cache (DOCS_COMPILE, DOCS_ENV), so the model is rebuilt and compiled again instead."""

    meta = RuleMeta(
        "NM402",
        "saved traced Neuron model (torch.jit.save / torch.jit.load)",
        safety=MANUAL,
        risks=frozenset({"checkpoint-format"}),
        summary=(
            "A traced model saved with torch.jit.save has no TorchNeuron counterpart: save the weights, rebuild "
            "and recompile the model at start-up; the NEFF cache keeps the compile work."
        ),
        docs=(DOCS_COMPILE, DOCS_ENV),
        # A load whose path names "neuron" is migrated without any torch_neuronx import: every spelling of
        # torch.jit.load / torch.jit.save names `jit`.
        triggers=(*TRIGGERS, b"jit"),
        example=Example(
            before=(
                "import torch\n"
                "import torch_neuronx\n\n"
                'model = torch.jit.load("resnet50_neuron.pt")\n'
            ),
            after=(
                "import torch\n"
                "import torch_neuronx\n\n"
                f"# TODO(neuron-migrate NM402): {RECOMPILE}\n"
                'model = torch.jit.load("resnet50_neuron.pt")\n'
            ),
        ),
    )
    follow_up_todos = True
    calls = {"torch.jit.save": "save", "torch.jit.load": "load"}

    def save(self, original: cst.Call, updated: cst.Call, qname: str):
        saved = first_argument(original, "m")
        if saved is None:
            return updated
        is_trace = isinstance(saved, cst.Call) and self.ctx.any_qualified_name(saved.func, TRACE)
        if is_trace or code_of(saved) in traced_names(self.ctx):
            self.ctx.manual(original, RECOMPILE)
        return updated

    def load(self, original: cst.Call, updated: cst.Call, qname: str):
        path = first_argument(original, "f")
        names_neuron = path is not None and "neuron" in code_of(path).lower()
        if names_neuron or imports_torch_neuronx(self.ctx):
            self.ctx.manual(original, RECOMPILE)
        return updated


# ----- NM403-NM406, NM408: APIs with no counterpart -------------------------------------------------

@register
class DataParallelToProcesses(Rule):
    """``torch_neuronx.DataParallel`` split batches over the cores of one process; TorchNeuron runs one
    process per NeuronCore (DOCS_DISTRIBUTED)."""

    meta = RuleMeta(
        "NM403",
        "torch_neuronx.DataParallel -> one process per NeuronCore",
        safety=MANUAL,
        risks=frozenset({"launch", "collectives"}),
        summary="Data parallelism is one process per NeuronCore (torchrun), with DDP when gradients are involved.",
        docs=(DOCS_DISTRIBUTED,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import torch_neuronx\n\n"
                "model_parallel = torch_neuronx.DataParallel(model_neuron)\n"
            ),
            after=(
                "import torch_neuronx\n\n"
                f"# TODO(neuron-migrate NM403): {DATA_PARALLEL}\n"
                "model_parallel = torch_neuronx.DataParallel(model_neuron)\n"
            ),
        ),
    )
    rows = ROWS


@register
class AnalyzeToFallbackOps(Rule):
    """``torch_neuronx.analyze`` reported unsupported ops before tracing; TorchNeuron runs them on the CPU
    and lists them in ``torch_neuronx.get_fallback_ops()`` (DOCS_BEST_PRACTICES)."""

    meta = RuleMeta(
        "NM404",
        "torch_neuronx.analyze -> torch_neuronx.get_fallback_ops()",
        safety=MANUAL,
        risks=frozenset({"performance"}),
        summary="Ops the device cannot run are found by running eagerly and reading torch_neuronx.get_fallback_ops().",
        docs=(DOCS_BEST_PRACTICES,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import torch_neuronx\n\n"
                "report = torch_neuronx.analyze(model, example)\n"
            ),
            after=(
                "import torch_neuronx\n\n"
                f"# TODO(neuron-migrate NM404): {ANALYZE}\n"
                "report = torch_neuronx.analyze(model, example)\n"
            ),
        ),
    )
    rows = ROWS


@register
class TracedModelHelpers(Rule):
    """lazy_load, async_load, replace_weights, move_trace_to_device, dynamic_batch worked on traced
    models; with torch.compile the model is an ordinary module on device "neuron" (DOCS_COMPILE)."""

    meta = RuleMeta(
        "NM405",
        "traced-model helpers (lazy_load, replace_weights, dynamic_batch, ...)",
        safety=MANUAL,
        risks=frozenset({"performance"}),
        summary="Helpers for traced models have no counterpart: the compiled model is an ordinary module.",
        docs=(DOCS_COMPILE,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import torch_neuronx\n\n"
                "model = torch_neuronx.dynamic_batch(model)\n"
            ),
            after=(
                "import torch_neuronx\n\n"
                f"# TODO(neuron-migrate NM405): {TRACED_MODEL_HELPERS['dynamic_batch']}\n"
                "model = torch_neuronx.dynamic_batch(model)\n"
            ),
        ),
    )
    rows = ROWS


@register
class CorePlacement(Rule):
    """The experimental core-placement helpers -> ``torch.neuron.set_device`` / ``torch.neuron.device``
    (DOCS_MODULE) or NEURON_RT_VISIBLE_CORES."""

    meta = RuleMeta(
        "NM406",
        "torch_neuronx.experimental core placement -> torch.neuron.set_device",
        safety=MANUAL,
        risks=frozenset({"launch"}),
        summary="Cores are chosen with torch.neuron.set_device / torch.neuron.device or NEURON_RT_VISIBLE_CORES.",
        docs=(DOCS_MODULE,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import torch_neuronx\n\n"
                "with torch_neuronx.experimental.neuron_cores_context(start_nc=2):\n"
                "    model = load_model(path)\n"
            ),
            after=(
                "import torch_neuronx\n\n"
                f"# TODO(neuron-migrate NM406): {CORE_PLACEMENT['neuron_cores_context']}\n"
                "with torch_neuronx.experimental.neuron_cores_context(start_nc=2):\n"
                "    model = load_model(path)\n"
            ),
        ),
    )
    rows = ROWS


@register
class NkiJitToNkiOp(Rule):
    """``torch_neuronx.nki_jit`` (removed in 2.24) -> an ``@nki.jit`` kernel registered with
    ``@torch_neuronx.nki_op`` (DOCS_NATIVE_FAQ)."""

    meta = RuleMeta(
        "NM408",
        "torch_neuronx.nki_jit -> @nki.jit + torch_neuronx.nki_op",
        safety=MANUAL,
        risks=frozenset({"numerics"}),
        summary="NKI kernels are registered as PyTorch ops with torch_neuronx.nki_op; they run eager and compiled.",
        docs=(DOCS_NATIVE_FAQ,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from torch_neuronx import nki_jit\n\n"
                "add_kernel = nki_jit(add_kernel_impl)\n"
            ),
            after=(
                "from torch_neuronx import nki_jit\n\n"
                f"# TODO(neuron-migrate NM408): {NKI}\n"
                "add_kernel = nki_jit(add_kernel_impl)\n"
            ),
        ),
    )
    rows = ROWS


# ----- NM407: data_parallel.device_count -> torch.neuron.device_count --------------------------------

DEVICE_COUNT = "torch_neuronx.xla_impl.data_parallel.device_count"


@register
class DeviceCount(Rule):
    """``torch_neuronx.xla_impl.data_parallel.device_count()`` counted the NeuronCores visible to the
    process, as ``torch.neuron.device_count()`` does (DOCS_MODULE)."""

    meta = RuleMeta(
        "NM407",
        "data_parallel.device_count() -> torch.neuron.device_count()",
        safety=SAFE,
        summary="Both count the NeuronCores visible to this process.",
        docs=(DOCS_MODULE,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from torch_neuronx.xla_impl.data_parallel import device_count\n\n"
                "cores = device_count()\n"
            ),
            after=(
                "import torch\n\n"
                "cores = torch.neuron.device_count()\n"
            ),
        ),
    )
    calls = {DEVICE_COUNT: "count"}
    references = {DEVICE_COUNT: "count_function"}

    def count(self, original: cst.Call, updated: cst.Call, qname: str):
        if updated.args:
            self.ctx.manual(original, "use `torch.neuron.device_count()`")
            return updated
        return self.ctx.expr(f"{self.ctx.require_import('torch')}.neuron.device_count()")

    def count_function(self, original: cst.CSTNode, updated: cst.CSTNode, qname: str):
        return self.ctx.expr(f"{self.ctx.require_import('torch')}.neuron.device_count")


# ----- NM409: the rest of the XLA-era torch_neuronx ------------------------------------------------

TABLE_RULES = (TraceToCompile, DataParallelToProcesses, AnalyzeToFallbackOps, TracedModelHelpers, CorePlacement,
               NkiJitToNkiOp, DeviceCount)


@register
class OtherXlaEraApi(LegacyUseRule):
    """Any other use of the XLA-era parts of torch_neuronx (``xla_impl``, ``experimental``, ``testing``,
    ``pyhlo``, ...): the package's legacy entries in LEGACY_MODULES, none of which TorchNeuron ships."""

    meta = RuleMeta(
        "NM409",
        "other XLA-era torch_neuronx API",
        safety=MANUAL,
        summary=(
            "XLA-era torch_neuronx internals (xla_impl, testing, pyhlo, experimental, proto, fsdp_mics) are gone "
            "on TorchNeuron."
        ),
        docs=(DOCS_NO_XLA_INFERENCE, DOCS_COMPILE),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from torch_neuronx.pyhlo import xla_data_pb2\n\n"
                "shape = xla_data_pb2.ShapeProto()\n"
            ),
            after=(
                "from torch_neuronx.pyhlo import xla_data_pb2\n\n"
                "# TODO(neuron-migrate NM409): `torch_neuronx.pyhlo.xla_data_pb2.ShapeProto` is XLA-era torch-neuronx; "
                f"{LEGACY_PARTS['torch_neuronx.pyhlo']}\n"
                "shape = xla_data_pb2.ShapeProto()\n"
            ),
        ),
    )
    prefixes = tuple(p for p in rule_families.LEGACY_MODULES if p.startswith("torch_neuronx."))

    rows = ROWS

    def handle_use(self, original, updated, use: LegacyUse):
        table = "calls" if isinstance(original, cst.Call) else "references"
        if any(use.qname in getattr(rule, table) for rule in TABLE_RULES):
            return updated
        self.ctx.manual(original, f"`{use.qname}` is XLA-era torch-neuronx; {self._advice(use.qname)}")
        return updated

    @classmethod
    def _advice(cls, qname: str) -> str:
        leaf = qname.rsplit(".", 1)[-1]
        # A known API reached through an unusual path keeps its own advice.
        for rule in TABLE_RULES:
            for row in rule.rows:
                if isinstance(row.action, Manual) and row.name.rsplit(".", 1)[-1] == leaf:
                    return row.action.step
        if leaf == "trace":
            return f"compile the model instead: `{COMPILE_LATER}`"
        part = row_for(cls.row_table, qname)
        return part.action.step if part else 'do this with stock PyTorch on device "neuron"'


# ----- NM410: torch_neuronx.distributed on the XLA stack ------------------------------------------

# What TorchNeuron's own torch_neuronx.distributed provides: the "neuron" process-group backend,
# registered by `import torch_neuronx`.
NATIVE_DISTRIBUTED = ("torch_neuronx.distributed.backend",)
XLA_DISTRIBUTED = (
    'XLA-era torch_neuronx.distributed; use stock torch.distributed on the neuron process group: '
    '`dist.init_process_group("neuron")`, then DDP, FSDP2 `fully_shard` or DTensor'
)


@register
class XlaEraDistributed(LegacyUseRule):
    """``torch_neuronx.distributed`` held XLA-stack helpers; on TorchNeuron the module only registers the
    ``"neuron"`` process-group backend, and parallelism comes from stock torch.distributed (DOCS_DISTRIBUTED).
    A use outside the backend gets a marker; ``fsdp_mics`` has its own advice (NM409)."""

    meta = RuleMeta(
        "NM410",
        "XLA-era torch_neuronx.distributed API",
        safety=MANUAL,
        risks=frozenset({"collectives"}),
        summary=(
            "torch_neuronx.distributed on TorchNeuron is the neuron process-group backend only; XLA-stack helpers "
            "from it become stock torch.distributed (DDP, FSDP2, DTensor)."
        ),
        docs=(DOCS_DISTRIBUTED,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from torch_neuronx.distributed import xla_helpers\n\n"
                "group = xla_helpers.replica_group(world_size)\n"
            ),
            after=(
                "from torch_neuronx.distributed import xla_helpers\n\n"
                "# TODO(neuron-migrate NM410): `torch_neuronx.distributed.xla_helpers.replica_group` is "
                f"{XLA_DISTRIBUTED}\n"
                "group = xla_helpers.replica_group(world_size)\n"
            ),
        ),
    )
    prefixes = ("torch_neuronx.distributed",)

    def handle_use(self, original, updated, use: LegacyUse):
        native_or_known = (*NATIVE_DISTRIBUTED, *rule_families.LEGACY_MODULES)
        if any(use.qname == p or use.qname.startswith(p + ".") for p in native_or_known):
            return updated
        self.ctx.manual(original, f"`{use.qname}` is {XLA_DISTRIBUTED}")
        return updated


# ----- NM411: libneuronxla, the XLA-era PJRT plugin -----------------------------------------------

@register
class LibneuronxlaRemoved(LegacyUseRule):
    """``libneuronxla`` is the PJRT plugin through which torch_xla reached Neuron devices; TorchNeuron
    runs the device natively and never loads it (DOCS_BEST_PRACTICES, DOCS_ENV). Scripts patched its
    environment set-up; the settings move to environment variables."""

    meta = RuleMeta(
        "NM411",
        "libneuronxla (XLA PJRT plugin) use",
        safety=MANUAL,
        summary=(
            "libneuronxla is not installed with TorchNeuron; its environment hooks become NEURON_CC_FLAGS and "
            "NEURON_RT_* variables."
        ),
        docs=(DOCS_ENV, DOCS_BEST_PRACTICES),
        triggers=(b"libneuronxla",),
        example=Example(
            before=(
                "import libneuronxla\n\n"
                "libneuronxla.configure_environment = configure_for_tests\n"
            ),
            after=(
                "import libneuronxla\n\n"
                f"# TODO(neuron-migrate NM411): {LIBNEURONXLA['configure_environment']}\n"
                "libneuronxla.configure_environment = configure_for_tests\n"
            ),
        ),
    )
    prefixes = ("libneuronxla",)
    rows = ROWS

    def handle_use(self, original, updated, use: LegacyUse):
        row = row_for(self.row_table, use.qname)
        self.ctx.manual(original, row.action.step if row else LIBNEURONXLA_OTHER)
        return updated
