"""NM123: xm.rendezvous() -> dist.barrier()"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Example, RuleMeta, register
from neuron_migrate.rules.calls import bind_args
from neuron_migrate.rules.tables.xla_distributed import XM
from neuron_migrate.rules.xla_distributed.common import (
    DOCS_DISTRIBUTED,
    DOCS_DIST_API,
    LEGACY_ARGUMENTS,
    DistributedRule,
    is_absent_or,
)


# ----- NM123: rendezvous --------------------------------------------------------------------------------
@register
class RendezvousToBarrier(DistributedRule):
    """xm.rendezvous(tag) -> dist.barrier(), when a process group exists."""

    meta = RuleMeta(
        "NM123",
        "xm.rendezvous() -> dist.barrier()",
        safety=SAFE,
        risks=frozenset({"collectives"}),
        summary="A rendezvous without a payload is a barrier; the guard keeps single-process runs working.",
        docs=(DOCS_DIST_API, DOCS_DISTRIBUTED),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                'xm.rendezvous("checkpoint_saved")\n'
            ),
            after=(
                "import torch.distributed as dist\n\n"
                "if dist.is_initialized():\n"
                "    dist.barrier()\n"
            ),
        ),
    )
    calls = {f"{XM}.rendezvous": "to_barrier"}

    def to_barrier(self, original: cst.Call, updated: cst.Call, qname: str):
        gather = (
            "exchange objects with `payloads = [None] * dist.get_world_size()` then "
            "`dist.all_gather_object(payloads, payload)`"
        )
        bound = bind_args(updated, ("tag", "payload", "replicas"))
        if bound is None:
            return self.manual(original, updated, f"arguments not understood; use `dist.barrier()`, or {gather}")
        if not is_absent_or(bound, "payload", b"", ""):
            return self.manual(original, updated, f"rendezvous with a payload: {gather}")
        if not is_absent_or(bound, "replicas", [], (), None):
            return self.manual(
                original, updated, "rendezvous of some replicas: `dist.barrier(group=dist.new_group(replicas))`"
            )
        if self.shape(original) != ("bare", None):
            return self.manual(original, updated, f"its result (every rank's payload) is used: {gather}")
        if self.keeps_legacy_arguments(original, updated):
            return self.manual(original, updated, LEGACY_ARGUMENTS)
        dist = self.dist
        return self.replace_with(original, [f"if {dist}.is_initialized():", f"\t{dist}.barrier()"])
