"""NM427: NxDPPModel -> torch.distributed.pipelining"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.neuronx_distributed.common import (
    DOCS_DISTRIBUTED,
    DOCS_PIPELINING,
    PLAN_SHORT,
    TRIGGERS,
    NxdRule,
)
from neuron_migrate.rules.tables.neuronx_distributed import PIPELINE, ROWS


@register
class PipelineToTorchPipelining(NxdRule):
    """``NxDPPModel`` -> ``torch.distributed.pipelining`` stages and schedules (DOCS_PIPELINING), which
    the Neuron distributed guide lists as supported."""

    meta = RuleMeta(
        "NM427",
        "NxDPPModel -> torch.distributed.pipelining",
        safety=MANUAL,
        risks=frozenset({"collectives", "performance"}),
        summary="Pipeline parallelism is torch.distributed.pipelining: PipelineStage plus a schedule.",
        docs=(DOCS_PIPELINING, DOCS_DISTRIBUTED),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from neuronx_distributed.pipeline import NxDPPModel\n\n"
                "model = NxDPPModel(model, transformer_layer_cls=Block, num_microbatches=8)\n"
            ),
            after=(
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"NxDPPModel in order: {PLAN_SHORT}\n"
                "from neuronx_distributed.pipeline import NxDPPModel\n\n"
                f"# TODO(neuron-migrate NM427): {PIPELINE}\n"
                "model = NxDPPModel(model, transformer_layer_cls=Block, num_microbatches=8)\n"
            ),
        ),
    )
    rows = ROWS
