"""NM449: other neuronx_distributed API"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.neuronx_distributed.common import (
    DOCS_DISTRIBUTED,
    DOCS_TRANSITION,
    NXD,
    PLAN_SHORT,
    TRIGGERS,
    NxdRule,
)
from neuron_migrate.rules.neuronx_trace.common import LegacyUse
from neuron_migrate.rules.tables.neuronx_distributed import ROWS


# ----- NM449: any other NxD name ----------------------------------------------------------------------


@register
class OtherNxdApi(NxdRule):
    """Every other neuronx_distributed name: its rows of the family table for the known ones, and for the
    rest a marker naming the module, so no NxD use is left without a next step (DOCS_TRANSITION,
    DOCS_DISTRIBUTED)."""

    answers_the_rest = "generic"
    meta = RuleMeta(
        "NM449",
        "other neuronx_distributed API",
        safety=MANUAL,
        risks=frozenset({"collectives"}),
        summary="Other NxD APIs have no drop-in replacement; rebuild them with stock torch.distributed.",
        docs=(DOCS_TRANSITION, DOCS_DISTRIBUTED),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from neuronx_distributed.parallel_layers.grads import clip_grad_norm\n\n"
                "clip_grad_norm(model.parameters(), 1.0)\n"
            ),
            after=(
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"clip_grad_norm in order: {PLAN_SHORT}\n"
                "from neuronx_distributed.parallel_layers.grads import clip_grad_norm\n\n"
                "# TODO(neuron-migrate NM449): use `torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)`: it "
                "handles DTensor and FSDP2 parameters\n"
                "clip_grad_norm(model.parameters(), 1.0)\n"
            ),
        ),
    )
    rows = ROWS

    def generic(self, original, updated, use: LegacyUse, api: str):
        module, _, name = use.qname.rpartition(".")
        self.ctx.manual(
            self.meta,
            original,
            f"`{name}` from {module or NXD} has no drop-in replacement: rebuild it with stock PyTorch "
            "(DeviceMesh, DTensor, FSDP2) following the NM420 plan",
        )
        return updated
