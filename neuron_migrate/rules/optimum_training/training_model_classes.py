"""NM212: optimum-neuron training model class or TrainingNeuronConfig used directly"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.optimum_names import with_methods
from neuron_migrate.rules.optimum_training.common import DOCS_DISTRIBUTED, DOCS_DISTRIBUTED_CONFIG, TRIGGERS
from neuron_migrate.rules.optimum_training.script_scan import script_facts
from neuron_migrate.rules.rows import answer_row
from neuron_migrate.rules.tables.optimum_training import MODEL_CLASSES, ROWS


@register
class TrainingModelClasses(Rule):
    """optimum-neuron's training model classes and TrainingNeuronConfig outside a from_pretrained that
    NM211 rewrites: each use gets the concrete next step."""

    meta = RuleMeta(
        "NM212",
        "optimum-neuron training model class or TrainingNeuronConfig used directly",
        safety=MANUAL,
        risks=frozenset({"collectives"}),
        summary=(
            "TrainingNeuronConfig becomes DistributedConfig at from_pretrained; NeuronModel / NeuronModelMixin "
            "and direct construction of the training classes have no drop-in counterpart."
        ),
        docs=(DOCS_DISTRIBUTED_CONFIG, DOCS_DISTRIBUTED),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron.models.training import TrainingNeuronConfig\n\n"
                "trn_config = TrainingNeuronConfig(tensor_parallel_size=2)\n"
                "save_config(trn_config)\n"
            ),
            after=(
                "from optimum.neuron.models.training import TrainingNeuronConfig\n\n"
                "# TODO(neuron-migrate NM212): TrainingNeuronConfig has no TorchNeuron counterpart: pass "
                "distributed_config=DistributedConfig(tp_size=N) (transformers.distributed) to from_pretrained\n"
                "trn_config = TrainingNeuronConfig(tensor_parallel_size=2)\n"
                "save_config(trn_config)\n"
            ),
        ),
    )
    rows = ROWS
    calls = dict.fromkeys(with_methods(tuple(MODEL_CLASSES), "from_config"), "from_config")

    def apply_row(self, original, updated, qname: str):
        # A TrainingNeuronConfig(...) that NM211 folds into from_pretrained is answered there.
        if id(original) in script_facts(self.ctx).skip_nodes:
            return updated
        return answer_row(self, original, updated, qname)

    def from_config(self, original, updated, qname: str):
        owner = qname.rsplit(".", 1)[0]
        self.ctx.manual(
            self.meta,
            original,
            f"use transformers.{MODEL_CLASSES[owner]}.from_config(config) without trn_config (and "
            "DistributedConfig at from_pretrained for tensor parallelism)",
        )
        return updated
