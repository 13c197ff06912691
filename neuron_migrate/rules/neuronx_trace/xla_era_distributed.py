"""NM410: XLA-era torch_neuronx.distributed API"""

from __future__ import annotations

from neuron_migrate import rules as rule_families
from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.neuronx_trace.common import (
    DOCS_DISTRIBUTED,
    NATIVE_DISTRIBUTED,
    TRIGGERS,
    XLA_DISTRIBUTED,
    LegacyUse,
    LegacyUseRule,
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
        self.ctx.manual(self.meta, original, f"`{use.qname}` is {XLA_DISTRIBUTED}")
        return updated
