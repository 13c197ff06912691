"""NM114: xm.add_step_closure(fn, args) -> fn(*args)"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import REVIEW, Edit, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import bind_args, receiver, spread_arguments
from neuron_migrate.rules.xla_step.common import DOCS_EAGER, STEP_CLOSURE_PARAMS, inline_lambda


@register
class StepClosureCall(Rule):
    """``xm.add_step_closure(fn, args)`` deferred ``fn`` to the end of the lazy step; in eager mode it
    can run where it stands, and reading tensor values in it waits for the device (Neuron eager docs)."""

    meta = RuleMeta(
        "NM114",
        "xm.add_step_closure(fn, args) -> fn(*args)",
        safety=REVIEW,
        risks=frozenset({"performance"}),
        summary="The closure now runs immediately instead of after the step; tensor reads in it wait for the device.",
        docs=(DOCS_EAGER,),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "xm.add_step_closure(log_loss, args=(loss, step))\n"
            ),
            after=(
                "# neuron-migrate(NM114): the closure now runs immediately, not after the step; its tensor "
                "reads wait for the device\n"
                "log_loss(loss, step)\n"
            ),
        ),
    )
    calls = {"torch_xla.core.xla_model.add_step_closure": "call_now"}

    MESSAGE = "the closure now runs immediately, not after the step; its tensor reads wait for the device"

    def call_now(self, original: cst.Call, updated: cst.Call, qname: str):
        args = bind_args(updated, STEP_CLOSURE_PARAMS)
        if args is None or "closure" not in args:
            self.ctx.manual(self.meta, original, "call the closure directly: `fn(*args)`")
            return updated
        closure = args["closure"].value
        call_args = spread_arguments(args.get("args"))
        if isinstance(closure, cst.Lambda):
            body = inline_lambda(closure, args.get("args"))
            if body is not None:
                return Edit(self._inline(body), review=self.MESSAGE)
        return Edit(self.ctx.expr(f"{receiver(closure)}({call_args})"), review=self.MESSAGE)

    def _inline(self, body: cst.BaseExpression) -> cst.BaseExpression:
        # `lambda: print(x)` called at once is just `print(x)`.
        if isinstance(body, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or body.lpar:
            return body
        return self.ctx.expr(f"({code_of(body)})")
