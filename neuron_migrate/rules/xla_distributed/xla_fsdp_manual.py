"""NM136: XLA FSDP needs a port to FSDP2 (fully_shard)"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.tables.xla_distributed import ROWS, WRAP_STEP
from neuron_migrate.rules.xla_distributed.common import (
    DOCS_DCP,
    DOCS_DISTRIBUTED,
    DOCS_FSDP2,
    DOCS_TUTORIAL,
    DistributedRule,
)


# ----- NM136: XLA FSDP --------------------------------------------------------------------------------------------


@register
class XlaFsdpManual(DistributedRule):
    """torch_xla's XlaFullyShardedDataParallel and checkpoint consolidation -> FSDP2, by hand."""

    meta = RuleMeta(
        "NM136",
        "XLA FSDP needs a port to FSDP2 (fully_shard)",
        safety=MANUAL,
        risks=frozenset({"collectives", "checkpoint-format"}),
        summary=(
            "Wrapping policy, optimizer construction order and sharded checkpoints differ; FSDP2 "
            "`fully_shard` on a neuron DeviceMesh is the supported replacement."
        ),
        docs=(DOCS_DISTRIBUTED, DOCS_TUTORIAL, DOCS_FSDP2, DOCS_DCP),
        example=Example(
            before=(
                "from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP\n\n"
                "model = FSDP(model)\n"
            ),
            after=(
                "from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP\n\n"
                f"# TODO(neuron-migrate NM136): {WRAP_STEP}\n"
                "model = FSDP(model)\n"
            ),
        ),
    )
    rows = ROWS
