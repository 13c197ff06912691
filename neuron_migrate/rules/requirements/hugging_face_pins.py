"""NM536: transformers < 5 / accelerate < 1.13 pins raised"""

from __future__ import annotations

from neuron_migrate.rules.base import REVIEW, RuleMeta, register
from neuron_migrate.rules.requirements.common import DOCS_RESOURCES, PACKAGES, TRIGGERS, RequirementRule, _example


@register
class HuggingFacePins(RequirementRule):
    """transformers < 5 and accelerate < 1.13 pins in a Neuron project are raised."""

    meta = RuleMeta(
        "NM536",
        "transformers < 5 / accelerate < 1.13 pins raised",
        safety=REVIEW,
        summary="The neuron device is known to Transformers 5 and Accelerate 1.13 onwards. Only files that also "
        "name a Neuron package or the Neuron pip repository are rewritten.",
        docs=(DOCS_RESOURCES,),
        triggers=TRIGGERS,
        kind="requirements",
        example=_example(
            "transformers==4.57.1\ntorch-neuronx\n",
            f"# neuron-migrate(NM536): {PACKAGES['transformers'].why}\ntransformers>=5.0\ntorch-neuronx\n",
        ),
    )
