"""NM135: torch_xla SPMD needs a redesign with DTensor / DeviceMesh"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.rows import answer_row
from neuron_migrate.rules.tables.xla_distributed import ROWS
from neuron_migrate.rules.xla_distributed.common import DOCS_CHANGES, DOCS_DISTRIBUTED, DOCS_DTENSOR, DistributedRule
from neuron_migrate.rules.xla_distributed.spmd_plan import PARAMETER_STEP, spmd_plan


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
            "(distribute_tensor, parallelize_module) on a DeviceMesh of the neuron device. NM137 migrates a mesh "
            "and the Linear weights split along one of its axes; what is left here gets the next step for what "
            "it shards: a parameter, an input or activation, the global mesh."
        ),
        docs=(DOCS_CHANGES, DOCS_DISTRIBUTED, DOCS_DTENSOR),
        example=Example(
            before=(
                "import torch_xla.distributed.spmd as xs\n\n"
                'xs.mark_sharding(weight, mesh, ("model", None))\n'
            ),
            after=(
                "import torch_xla.distributed.spmd as xs\n\n"
                f"# TODO(neuron-migrate NM135): {PARAMETER_STEP}\n"
                'xs.mark_sharding(weight, mesh, ("model", None))\n'
            ),
        ),
    )
    follow_up_todos = True
    rows = ROWS

    def apply_row(self, original, updated, qname: str):
        plan = spmd_plan(self.ctx)
        if plan.handles(original):
            return updated  # NM137 migrates it
        if id(original) in plan.dropped:
            # The input_sharding= of a device loader that NM140 removes, and says what it did.
            self.ctx.answered_by_enclosing_call()
            return updated
        step = plan.steps.get(id(original))
        if step is not None:
            self.ctx.manual(self.meta, original, step)
            return updated
        return answer_row(self, original, updated, qname)
