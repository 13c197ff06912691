"""NM306: Neuron compiled-model base classes"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.optimum_inference.common import DOCS_HF_NATIVE, OPTIMUM_TRIGGERS
from neuron_migrate.rules.tables.optimum_inference import ROWS


@register
class CompiledModelBaseClass(Rule):
    """``NeuronTracedModel``, ``NeuronModel``, ``NeuronPreTrainedModel`` and (up to 0.1)
    ``NeuronDecoderModel`` wrapped compiled artifacts; stock models need no wrapper (Neuron docs,
    TorchNeuron resources)."""

    meta = RuleMeta(
        "NM306",
        "Neuron compiled-model base classes",
        safety=MANUAL,
        risks=frozenset({"checkpoint-format"}),
        summary=(
            "These classes wrapped a compiled TorchScript/NxD artifact. Use the transformers model class (or "
            "PreTrainedModel for type checks) instead."
        ),
        docs=(DOCS_HF_NATIVE,),
        triggers=OPTIMUM_TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron import NeuronTracedModel\n\n"
                "def is_compiled(model):\n"
                "    return isinstance(model, NeuronTracedModel)\n"
            ),
            after=(
                "from optimum.neuron import NeuronTracedModel\n\n"
                "def is_compiled(model):\n"
                "    # TODO(neuron-migrate NM306): NeuronTracedModel wrapped a compiled artifact and has no "
                "counterpart: use the transformers model class, or PreTrainedModel for type checks\n"
                "    return isinstance(model, NeuronTracedModel)\n"
            ),
        ),
    )
    rows = ROWS
