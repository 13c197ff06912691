"""NM420: neuronx_distributed: migration plan for the file"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.neuronx_distributed.common import (
    DOCS_DISTRIBUTED,
    DOCS_MESH,
    DOCS_TP,
    DOCS_TRANSITION,
    NXD,
    PLAN_SHORT,
    PLAN_STEPS,
    TRIGGERS,
    is_automatic,
    nxd_bindings,
    owner,
    use_root,
)
from neuron_migrate.rules.neuronx_trace.common import legacy_uses


@register
class NxdMigrationPlan(Rule):
    """One finding per file that lists its NxD APIs and the whole port in order, on the import line the
    first hand-migrated use comes from; the per-use markers (NM421-NM449) stay short. The target
    stack is the one the Neuron distributed guide lists (DOCS_DISTRIBUTED): DeviceMesh, DTensor
    tensor parallelism, FSDP2, DCP and torchrun."""

    meta = RuleMeta(
        "NM420",
        "neuronx_distributed: migration plan for the file",
        safety=MANUAL,
        risks=frozenset({"collectives", "checkpoint-format", "launch"}),
        summary=(
            "NxD is end-of-support on TorchNeuron. The file's NxD APIs are listed with the port in order: DeviceMesh, "
            "nn layers + parallelize_module, loss_parallel, FSDP2 for ZeRO-1, DCP checkpoints, torchrun."
        ),
        docs=(DOCS_DISTRIBUTED, DOCS_TRANSITION, DOCS_MESH, DOCS_TP),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from neuronx_distributed.parallel_layers import ColumnParallelLinear\n\n"
                "up = ColumnParallelLinear(1024, 4096, gather_output=False)\n"
            ),
            after=(
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"ColumnParallelLinear in order: {PLAN_SHORT}\n"
                "from neuronx_distributed.parallel_layers import ColumnParallelLinear\n\n"
                "# TODO(neuron-migrate NM422): use `nn.Linear(1024, 4096)`; shard it with `parallelize_module("
                'model, mesh["tp"], {"<fqn>": ColwiseParallel()})`\n'
                "up = ColumnParallelLinear(1024, 4096, gather_output=False)\n"
            ),
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.placed = False

    def leave_Import(self, original: cst.Import, updated: cst.Import):
        return self._plan(original, updated)

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom):
        return self._plan(original, updated)

    def _plan(self, original, updated):
        if self.placed:
            return updated
        bound = nxd_bindings(original)
        if not bound:
            return updated
        manual = [use for use in legacy_uses(self.ctx, (NXD,)).values() if not is_automatic(use)]
        if not manual or use_root(manual[0]) not in bound:
            return updated
        self.placed = True
        apis = list(dict.fromkeys(owner(use.qname)[2] for use in manual))
        message = (
            f"neuronx_distributed is end-of-support; port this file's {', '.join(apis)} in order: {PLAN_SHORT}"
        )
        self.ctx.manual(self.meta, original, message, fix="; ".join(PLAN_STEPS))
        return updated
