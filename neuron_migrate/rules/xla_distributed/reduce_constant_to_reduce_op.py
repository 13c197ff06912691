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


# The collectives an XLA FSDP model carries as attributes (xla_fully_sharded_data_parallel.py): they take
# xm's reduce types and go with the XLA FSDP wrapper.
XLA_FSDP_CLASSES = ("XlaFullyShardedDataParallel", "SpmdFullyShardedDataParallel")
KEPT = "kept for XLA FSDP's `{attr}` ({legacy}), which stays until the model is ported to FSDP2; then "
FSDP_COLLECTIVES = {
    "all_reduce_op": KEPT.format(attr="all_reduce_op", legacy="xm.all_reduce")
    + "reduce with `dist.all_reduce(tensor, op={op})` (in place) instead of the model's all_reduce_op",
    "reduce_scatter_op": KEPT.format(attr="reduce_scatter_op", legacy="xm.reduce_scatter")
    + "use `dist.reduce_scatter_tensor(output, input, op={op})`",
    "all_gather_op": KEPT.format(attr="all_gather_op", legacy="xm.all_gather")
    + "use `dist.all_gather_into_tensor(output, input)`",
}


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
        # id of an argument value of an XLA FSDP collective -> that collective's attribute name
        self.fsdp_collective_args: dict[int, str] = {}
        self.uses_xla_fsdp = any(name in ctx.text for name in XLA_FSDP_CLASSES)

    def visit_Call(self, node: cst.Call) -> None:
        if any(_is_legacy(q) for q in self.ctx.qualified_names(node.func)) or self._binds_legacy_callable(node):
            self.legacy_call_args.update(id(arg.value) for arg in node.args)
        elif self.uses_xla_fsdp and isinstance(node.func, cst.Attribute) and node.func.attr.value in FSDP_COLLECTIVES:
            self.fsdp_collective_args.update((id(arg.value), node.func.attr.value) for arg in node.args)

    def _binds_legacy_callable(self, node: cst.Call) -> bool:
        """``functools.partial(xm.all_reduce, xm.REDUCE_SUM)``: the arguments are the legacy function's."""
        if not node.args or "functools.partial" not in self.ctx.qualified.imported(node.func):
            return False
        return any(_is_legacy(q) for q in self.ctx.qualified_names(node.args[0].value))

    def to_reduce_op(self, original, updated, qname: str):
        if id(original) in self.legacy_call_args:
            # The call's own rule migrates the op with it, or leaves call and op to a human as one:
            # a ReduceOp inside a legacy call would be wrong for the legacy API.
            self.ctx.answered_by_enclosing_call()
            return updated
        collective = self.fsdp_collective_args.get(id(original))
        if collective is not None:
            # `model.all_reduce_op(xm.REDUCE_SUM, t)` is XLA FSDP's xm.all_reduce: it stays until the model is
            # ported to FSDP2, and takes xm's reduce type until then.
            op = REDUCE_CONSTANTS[qname]
            self.ctx.manual(self.meta, original, FSDP_COLLECTIVES[collective].format(op=f"{self.dist}.ReduceOp.{op}"))
            return updated
        return keep_parens(self.ctx.expr(f"{self.dist}.ReduceOp.{REDUCE_CONSTANTS[qname]}"), updated)
