"""NM531: XLA-era torch-neuronx pin -> torch-neuronx>=2.14"""

from __future__ import annotations

from neuron_migrate.rules.base import REVIEW, RuleMeta, register
from neuron_migrate.rules.requirements.common import (
    DOCS_BEST_PRACTICES,
    DOCS_QUICKSTART,
    PACKAGES,
    TRIGGERS,
    RequirementRule,
    _example,
)


@register
class TorchNeuronxPin(RequirementRule):
    """An XLA-era torch-neuronx pin (any release before 2.14) becomes torch-neuronx>=2.14."""

    meta = RuleMeta(
        "NM531",
        "XLA-era torch-neuronx pin -> torch-neuronx>=2.14",
        safety=REVIEW,
        risks=frozenset({"launch"}),
        summary="torch-neuronx 2.14 and later is TorchNeuron; earlier releases are the PyTorch/XLA library. "
        "TorchNeuron runs on Trn2 / Trn3 only.",
        docs=(DOCS_BEST_PRACTICES, DOCS_QUICKSTART),
        triggers=TRIGGERS,
        kind="requirements",
        example=_example(
            "torch-neuronx==2.8.0.2.10.16998\n",
            f"# neuron-migrate(NM531): {PACKAGES['torch-neuronx'].why}\ntorch-neuronx>=2.14\n",
        ),
    )
