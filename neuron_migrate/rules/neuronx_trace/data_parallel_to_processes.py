"""NM403: torch_neuronx.DataParallel -> one process per NeuronCore"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.neuronx_trace.common import DOCS_DISTRIBUTED, TRIGGERS
from neuron_migrate.rules.tables.neuronx_trace import DATA_PARALLEL, ROWS


# ----- NM403-NM406, NM408: APIs with no counterpart -------------------------------------------------

@register
class DataParallelToProcesses(Rule):
    """``torch_neuronx.DataParallel`` split batches over the cores of one process; TorchNeuron runs one
    process per NeuronCore (DOCS_DISTRIBUTED)."""

    meta = RuleMeta(
        "NM403",
        "torch_neuronx.DataParallel -> one process per NeuronCore",
        safety=MANUAL,
        risks=frozenset({"launch", "collectives"}),
        summary="Data parallelism is one process per NeuronCore (torchrun), with DDP when gradients are involved.",
        docs=(DOCS_DISTRIBUTED,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import torch_neuronx\n\n"
                "model_parallel = torch_neuronx.DataParallel(model_neuron)\n"
            ),
            after=(
                "import torch_neuronx\n\n"
                f"# TODO(neuron-migrate NM403): {DATA_PARALLEL}\n"
                "model_parallel = torch_neuronx.DataParallel(model_neuron)\n"
            ),
        ),
    )
    rows = ROWS
