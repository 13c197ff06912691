"""NM133: xm._fetch_gradients() -> the gradients of the optimizer's param groups"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Example, RuleMeta, register
from neuron_migrate.rules.calls import bind_args, receiver
from neuron_migrate.rules.tables.xla_distributed import XM
from neuron_migrate.rules.xla_distributed.common import DistributedRule, keep_parens


# ----- NM133: the gradients an all-reduce averages ------------------------------------------------------
@register
class FetchGradientsToComprehension(DistributedRule):
    """xm._fetch_gradients(optimizer) -> the ``.grad.data`` of its parameters that have a gradient."""

    meta = RuleMeta(
        "NM133",
        "xm._fetch_gradients() -> the gradients of the optimizer's param groups",
        safety=SAFE,
        risks=frozenset({"collectives"}),
        summary=(
            "xm._fetch_gradients walked the optimizer's param groups and listed `p.grad.data` of every "
            "parameter with a gradient; the comprehension does the same in plain PyTorch."
        ),
        docs=("https://pytorch.org/docs/stable/optim.html",),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "gradients = xm._fetch_gradients(optimizer)\n"
            ),
            after=(
                'gradients = [p.grad.data for group in optimizer.param_groups for p in group["params"] '
                "if p.grad is not None]\n"
            ),
        ),
    )
    calls = {f"{XM}._fetch_gradients": "to_comprehension"}

    def to_comprehension(self, original: cst.Call, updated: cst.Call, qname: str):
        bound = bind_args(updated, ("optimizer",))
        if bound is None or "optimizer" not in bound:
            return self.manual(
                original,
                updated,
                'arguments not understood; use `[p.grad.data for group in optimizer.param_groups for p in '
                'group["params"] if p.grad is not None]`',
            )
        # The comprehension's own scope keeps `group` and `p` from touching the caller's names.
        optimizer = receiver(bound["optimizer"].value)
        code = (
            f'[p.grad.data for group in {optimizer}.param_groups for p in group["params"] if p.grad is not None]'
        )
        return keep_parens(self.ctx.expr(code), updated)
