"""NM127: xm.REDUCE_* -> dist.ReduceOp.*"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Example, RuleMeta, register
from neuron_migrate.rules.xla_distributed.common import (
    DOCS_DIST_API,
    REDUCE_CONSTANTS,
    DistributedRule,
    _is_legacy,
    keep_parens,
)


@register
class ReduceConstantToReduceOp(DistributedRule):
    """xm.REDUCE_SUM/MUL/AND/OR/MIN/MAX -> dist.ReduceOp.SUM/PRODUCT/BAND/BOR/MIN/MAX."""

    meta = RuleMeta(
        "NM127",
        "xm.REDUCE_* -> dist.ReduceOp.*",
        safety=SAFE,
        risks=frozenset({"collectives"}),
        summary="The reduce-type strings of torch_xla map one to one onto torch.distributed.ReduceOp.",
        docs=(DOCS_DIST_API,),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "OPS = {\"total\": xm.REDUCE_SUM, \"peak\": xm.REDUCE_MAX}\n"
            ),
            after=(
                "import torch.distributed as dist\n\n"
                "OPS = {\"total\": dist.ReduceOp.SUM, \"peak\": dist.ReduceOp.MAX}\n"
            ),
        ),
    )
    references = {name: "to_reduce_op" for name in REDUCE_CONSTANTS}

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # ids of the argument values of legacy calls: a constant there belongs to that call
        self.legacy_call_args: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        if any(_is_legacy(q) for q in self.ctx.qualified_names(node.func)):
            self.legacy_call_args.update(id(arg.value) for arg in node.args)

    def to_reduce_op(self, original, updated, qname: str):
        if id(original) in self.legacy_call_args:
            # The call's own rule migrates the op with it, or leaves call and op to a human as one:
            # a ReduceOp inside a legacy call would be wrong for the legacy API.
            self.ctx.answered_by_enclosing_call()
            return updated
        return keep_parens(self.ctx.expr(f"{self.dist}.ReduceOp.{REDUCE_CONSTANTS[qname]}"), updated)
