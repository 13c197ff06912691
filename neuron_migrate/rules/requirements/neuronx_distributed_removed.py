"""NM533: neuronx-distributed / transformers-neuronx requirements removed"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, RuleMeta, register
from neuron_migrate.rules.requirements.common import (
    DOCS_DISTRIBUTED,
    DOCS_TRANSITION,
    PACKAGES,
    TRIGGERS,
    RequirementRule,
    _example,
)


@register
class NeuronxDistributedRemoved(RequirementRule):
    """neuronx-distributed and the XLA inference libraries go; the code using them is ported by hand."""

    meta = RuleMeta(
        "NM533",
        "neuronx-distributed / transformers-neuronx requirements removed",
        safety=MANUAL,
        risks=frozenset({"collectives"}),
        summary="These libraries run only on the XLA stack. The requirement is removed (it cannot be installed "
        "next to TorchNeuron) and a TODO marker points at the model surgery the code still needs.",
        docs=(DOCS_DISTRIBUTED, DOCS_TRANSITION),
        triggers=TRIGGERS,
        kind="requirements",
        example=_example(
            "neuronx-distributed==0.15.22404\n",
            f"# TODO(neuron-migrate NM533): neuronx-distributed removed: {PACKAGES['neuronx-distributed'].why}\n",
        ),
    )
