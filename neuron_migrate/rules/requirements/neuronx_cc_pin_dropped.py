"""NM534: neuronx-cc kept, its pin dropped"""

from __future__ import annotations

from neuron_migrate.rules.base import REVIEW, RuleMeta, register
from neuron_migrate.rules.requirements.common import DOCS_BEST_PRACTICES, PACKAGES, TRIGGERS, RequirementRule, _example


@register
class NeuronxCcPinDropped(RequirementRule):
    """neuronx-cc stays (TorchNeuron still compiles graphs with it); its legacy pin goes."""

    meta = RuleMeta(
        "NM534",
        "neuronx-cc kept, its pin dropped",
        safety=REVIEW,
        risks=frozenset({"performance"}),
        summary="The native backend still compiles graphs with neuronx-cc, but torch-neuronx 2.14+ requires "
        "the compiler release it was built with, so an upper-bounded pin is dropped.",
        docs=(DOCS_BEST_PRACTICES,),
        triggers=TRIGGERS,
        kind="requirements",
        example=_example(
            "neuronx-cc==2.21.33363.0\n",
            f"# neuron-migrate(NM534): pin dropped: {PACKAGES['neuronx-cc'].why}\nneuronx-cc\n",
        ),
    )
