"""NM135: torch_xla SPMD needs a redesign with DTensor / DeviceMesh"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.tables.xla_distributed import ROWS, TENSOR_STEP
from neuron_migrate.rules.xla_distributed.common import DOCS_CHANGES, DOCS_DISTRIBUTED, DOCS_DTENSOR, DistributedRule


# ----- NM135: SPMD ----------------------------------------------------------------------------------------------


@register
class SpmdManual(DistributedRule):
    """PyTorch/XLA SPMD (GSPMD sharding annotations) -> DTensor on a DeviceMesh, by hand."""

    meta = RuleMeta(
        "NM135",
        "torch_xla SPMD needs a redesign with DTensor / DeviceMesh",
        safety=MANUAL,
        risks=frozenset({"collectives", "performance"}),
        summary=(
            "GSPMD sharding annotations have no TorchNeuron equivalent; the native way is DTensor "
            "(distribute_tensor, parallelize_module) on a DeviceMesh of the neuron device."
        ),
        docs=(DOCS_CHANGES, DOCS_DISTRIBUTED, DOCS_DTENSOR),
        example=Example(
            before=(
                "import torch_xla.distributed.spmd as xs\n\n"
                'xs.mark_sharding(weight, mesh, ("model", None))\n'
            ),
            after=(
                "import torch_xla.distributed.spmd as xs\n\n"
                f"# TODO(neuron-migrate NM135): {TENSOR_STEP}\n"
                'xs.mark_sharding(weight, mesh, ("model", None))\n'
            ),
        ),
    )
    follow_up_todos = True
    rows = ROWS
