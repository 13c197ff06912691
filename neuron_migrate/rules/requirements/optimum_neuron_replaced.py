"""NM532: optimum-neuron -> stock Hugging Face libraries"""

from __future__ import annotations

from neuron_migrate.rules.base import REVIEW, RuleMeta, register
from neuron_migrate.rules.requirements.common import DOCS_RESOURCES, TRIGGERS, RequirementRule, _example


@register
class OptimumNeuronReplaced(RequirementRule):
    """optimum-neuron -> stock Transformers / TRL / PEFT / Accelerate / Diffusers, chosen from its extras."""

    meta = RuleMeta(
        "NM532",
        "optimum-neuron -> stock Hugging Face libraries",
        safety=REVIEW,
        summary="optimum-neuron pins the XLA stack. It is replaced by transformers>=5.0 plus what its extras "
        "installed: [training] -> trl, peft, accelerate>=1.13; [neuronx] -> torch-neuronx>=2.14; "
        "[diffusers] -> diffusers. Packages the file already lists are not added again.",
        docs=(DOCS_RESOURCES,),
        triggers=TRIGGERS,
        kind="requirements",
        example=_example(
            "optimum-neuron[training]==0.4.5\npeft\n",
            "# neuron-migrate(NM532): optimum-neuron[training] replaced by transformers>=5.0, trl, "
            "accelerate>=1.13 (from its extra [training]); add diffusers if the code uses it\n"
            "transformers>=5.0\ntrl\naccelerate>=1.13\npeft\n",
        ),
    )
