"""NM426: NxD checkpoints -> torch.distributed.checkpoint"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.neuronx_distributed.common import (
    DOCS_DCP,
    PLAN_SHORT,
    TRIGGERS,
    NxdRule,
)
from neuron_migrate.rules.tables.neuronx_distributed import DCP_SAVE, ROWS


@register
class CheckpointsToDcp(NxdRule):
    """NxD's sharded checkpoints (parallel_layers.save/load, trainer save_checkpoint/load_checkpoint) ->
    ``torch.distributed.checkpoint`` (DOCS_DCP), which saves DTensor and FSDP2 shards."""

    meta = RuleMeta(
        "NM426",
        "NxD checkpoints -> torch.distributed.checkpoint",
        safety=MANUAL,
        risks=frozenset({"checkpoint-format"}),
        summary="Sharded checkpoints are written and read with torch.distributed.checkpoint; the NxD format is not.",
        docs=(DOCS_DCP,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import neuronx_distributed as nxd\n\n"
                'nxd.save_checkpoint("ckpt", tag="step_100", model=model, optimizer=optimizer)\n'
            ),
            after=(
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"save_checkpoint in order: {PLAN_SHORT}\n"
                "import neuronx_distributed as nxd\n\n"
                f"# TODO(neuron-migrate NM426): {DCP_SAVE}\n"
                'nxd.save_checkpoint("ckpt", tag="step_100", model=model, optimizer=optimizer)\n'
            ),
        ),
    )
    rows = ROWS
