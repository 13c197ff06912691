"""NM401: torch_neuronx.trace -> torch.compile(backend="neuron")"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import REVIEW, Edit, Example, register, Rule, RuleMeta
from neuron_migrate.rules.calls import bind_args, receiver
from neuron_migrate.rules.neuronx_trace.common import (
    COMPILE_LATER,
    DOCS_COMPILE,
    DOCS_ENV,
    DOCS_NO_XLA_INFERENCE,
    DROPPED_SILENTLY,
    MOVE_INPUTS,
    TRACE,
    TRACE_PARAMS,
    TRIGGERS,
    compiler_flags,
    function_names,
    one_line,
)


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
            self.ctx.manual(self.meta, original, f"compile the model instead: `{COMPILE_LATER}`")
            return updated
        torch = self.ctx.require_import("torch")
        target = self._compiled_target(bound["func"].value)
        review = "; ".join(self._review_notes(bound))
        dropped = [f"{name} ({why})" for name, why in DROPPED_SILENTLY.items() if name in bound]
        note = "traced model -> torch.compile on the neuron device"
        note += f"; dropped {', '.join(dropped)}" if dropped else ""
        compiled = self.ctx.expr(f'{torch}.compile({target}, backend="neuron", fullgraph=True)')
        return Edit(compiled, message=note, review=review)

    def manual_reference(self, original: cst.CSTNode, updated: cst.CSTNode, qname: str):
        self.ctx.manual(self.meta, original, f"call torch.compile where this is used: `{COMPILE_LATER}`")
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
