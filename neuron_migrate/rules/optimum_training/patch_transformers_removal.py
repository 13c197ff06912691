"""NM216: patch_transformers_for_neuron_sdk() removed"""

from __future__ import annotations

from neuron_migrate.rules.base import SAFE, Example, Rule, RuleMeta, register
from neuron_migrate.rules.optimum_training.common import DOCS_HF, TRIGGERS
from neuron_migrate.rules.tables.optimum_training import ROWS


@register
class PatchTransformersRemoval(Rule):
    """``patch_transformers_for_neuron_sdk()`` patched transformers for optimum-neuron's modeling code."""

    meta = RuleMeta(
        "NM216",
        "patch_transformers_for_neuron_sdk() removed",
        safety=SAFE,
        summary="Stock transformers runs on TorchNeuron unpatched.",
        docs=(DOCS_HF,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron.models.training import patch_transformers_for_neuron_sdk\n\n"
                "patch_transformers_for_neuron_sdk()\n"
                "main()\n"
            ),
            after="main()\n",
        ),
    )
    rows = ROWS
