"""NM215: optimum-neuron model-parallel helper"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.optimum_training.common import DOCS_DISTRIBUTED, DOCS_DISTRIBUTED_CONFIG, TRIGGERS
from neuron_migrate.rules.tables.optimum_training import ROWS


@register
class ModelParallelismHelpers(Rule):
    """optimum-neuron's own model-parallel machinery has no TorchNeuron counterpart."""

    meta = RuleMeta(
        "NM215",
        "optimum-neuron model-parallel helper",
        safety=MANUAL,
        risks=frozenset({"collectives", "checkpoint-format"}),
        summary=(
            "Parallelizer, ParallelizersManager, make_optimizer_constructor_lazy, ModelParallelismPlugin and the "
            "checkpoint consolidation helpers: tensor parallelism is DistributedConfig, checkpoints are "
            "save_pretrained."
        ),
        docs=(DOCS_DISTRIBUTED_CONFIG, DOCS_DISTRIBUTED),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron.distributed import ParallelizersManager\n\n"
                "model = ParallelizersManager.parallelizer_for_model(model).parallelize(model)\n"
            ),
            after=(
                "from optimum.neuron.distributed import ParallelizersManager\n\n"
                "# TODO(neuron-migrate NM215): ParallelizersManager has no TorchNeuron counterpart: build the model "
                "with from_pretrained(..., distributed_config=DistributedConfig(tp_size=N))\n"
                "model = ParallelizersManager.parallelizer_for_model(model).parallelize(model)\n"
            ),
        ),
    )
    rows = ROWS
