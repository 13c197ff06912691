"""NM129: other torch_xla collectives -> torch.distributed"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import MANUAL, Edit, Example, RuleMeta, StatementReplacement, register
from neuron_migrate.rules.tables.xla_distributed import ROWS
from neuron_migrate.rules.xla_distributed.common import (
    BROADCAST_MASTER_PARAM,
    BROADCAST_NEXT_STEP,
    DOCS_DISTRIBUTED,
    DOCS_DIST_API,
    LEGACY_ARGUMENTS,
    DistributedRule,
    _DdpFinder,
)


@register
class OtherCollectives(DistributedRule):
    """reduce_scatter, all_to_all, collective_permute, send/recv: TODO with the torch.distributed call.

    ``xm.broadcast_master_param(model)`` is deleted when the file wraps models in DDP, whose
    constructor broadcasts rank 0's parameters and buffers.
    """

    meta = RuleMeta(
        "NM129",
        "other torch_xla collectives -> torch.distributed",
        safety=MANUAL,
        risks=frozenset({"collectives"}),
        summary="Argument semantics differ (scatter dims, channel ids, replica groups): a human writes the call.",
        docs=(DOCS_DIST_API, DOCS_DISTRIBUTED),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "shard = xm.reduce_scatter(xm.REDUCE_SUM, grad, 1.0, 0, world_size)\n"
            ),
            after=(
                "import torch_xla.core.xla_model as xm\n\n"
                "# TODO(neuron-migrate NM129): use `dist.reduce_scatter_single(out, input, op=dist.ReduceOp.SUM)` "
                "(scatters dim 0 into world_size parts; move `scatter_dim` to dim 0 first), then `out.mul_(scale)`\n"
                "shard = xm.reduce_scatter(xm.REDUCE_SUM, grad, 1.0, 0, world_size)\n"
            ),
        ),
    )
    rows = ROWS
    calls = {name: "broadcast_master_param" for name in BROADCAST_MASTER_PARAM}

    _uses_ddp: bool | None = None

    def broadcast_master_param(self, original: cst.Call, updated: cst.Call, qname: str):
        if not self.uses_ddp() or self.shape(original) != ("bare", None):
            return self.manual(original, updated, BROADCAST_NEXT_STEP)
        if self.keeps_legacy_arguments(original, updated):
            return self.manual(original, updated, LEGACY_ARGUMENTS)
        return Edit(
            StatementReplacement([], fallback=BROADCAST_NEXT_STEP),
            message="xm.broadcast_master_param() removed: DDP broadcasts rank 0's weights",
            review="removed: DDP broadcasts rank 0's weights when it wraps the model; wrap it after loading them",
        )

    def uses_ddp(self) -> bool:
        if self._uses_ddp is None:
            finder = _DdpFinder(self.ctx)
            self.ctx.module.visit(finder)
            self._uses_ddp = finder.found
        return self._uses_ddp
