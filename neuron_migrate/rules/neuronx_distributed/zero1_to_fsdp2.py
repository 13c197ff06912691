"""NM428: NeuronZero1Optimizer -> FSDP2 fully_shard"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.calls import bind_args, receiver
from neuron_migrate.rules.neuronx_distributed.common import (
    DOCS_DISTRIBUTED,
    DOCS_FSDP2,
    OPTIMIZER_PARAMS,
    PLAN_SHORT,
    TRIGGERS,
    ZERO1_OPTIONS,
    NxdRule,
)
from neuron_migrate.rules.neuronx_trace.common import LegacyUse
from neuron_migrate.rules.tables.neuronx_distributed import ROWS, ZERO1


@register
class Zero1ToFsdp2(NxdRule):
    """NeuronZero1Optimizer / initialize_parallel_optimizer sharded optimizer state over data-parallel
    ranks; FSDP2 ``fully_shard`` does that and more (DOCS_FSDP2)."""

    meta = RuleMeta(
        "NM428",
        "NeuronZero1Optimizer -> FSDP2 fully_shard",
        safety=MANUAL,
        risks=frozenset({"collectives", "checkpoint-format"}),
        summary="Optimizer-state sharding comes from FSDP2 fully_shard on the data-parallel mesh dimension.",
        docs=(DOCS_FSDP2, DOCS_DISTRIBUTED),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import torch\n"
                "from neuronx_distributed.trainer import initialize_parallel_optimizer\n\n"
                "optimizer = initialize_parallel_optimizer(nxd_config, torch.optim.AdamW, params, lr=1e-4)\n"
            ),
            after=(
                "import torch\n"
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"initialize_parallel_optimizer in order: {PLAN_SHORT}\n"
                "from neuronx_distributed.trainer import initialize_parallel_optimizer\n\n"
                "# TODO(neuron-migrate NM428): after `fully_shard(model, mesh=mesh[\"dp\"])` create the optimizer "
                "directly: `torch.optim.AdamW(params, lr=1e-4)` (FSDP2 shards its state)\n"
                "optimizer = initialize_parallel_optimizer(nxd_config, torch.optim.AdamW, params, lr=1e-4)\n"
            ),
        ),
    )
    apis = {"NeuronZero1Optimizer": "optimizer", "initialize_parallel_optimizer": "optimizer"}
    rows = ROWS

    def optimizer(self, original, updated, use: LegacyUse, api: str):
        params, parameters = OPTIMIZER_PARAMS[api]
        bound = bind_args(original, params, other_keywords=True) if isinstance(original, cst.Call) else None
        if not bound or parameters not in bound or "optimizer_class" not in bound:
            self.ctx.manual(self.meta, original, ZERO1)
            return updated
        options = [
            f"{arg.keyword.value}={code_of(arg.value)}"
            for arg in original.args
            if arg.keyword is not None and arg.keyword.value not in bound and arg.keyword.value not in ZERO1_OPTIONS
        ]
        arguments = ", ".join([code_of(bound[parameters].value), *options])
        created = f"{receiver(bound['optimizer_class'].value)}({arguments})"
        self.ctx.manual(
            self.meta,
            original,
            f'after `fully_shard(model, mesh=mesh["dp"])` create the optimizer directly: `{created}` '
            "(FSDP2 shards its state)",
        )
        return updated
