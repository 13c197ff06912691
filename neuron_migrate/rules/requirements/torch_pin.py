"""NM535: torch pinned below 2.13 -> torch>=2.13"""

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
class TorchPin(RequirementRule):
    """A torch pin below 2.13 in a Neuron project becomes torch>=2.13."""

    meta = RuleMeta(
        "NM535",
        "torch pinned below 2.13 -> torch>=2.13",
        safety=REVIEW,
        risks=frozenset({"numerics"}),
        summary="TorchNeuron is built for PyTorch 2.13 / 2.14. Only files that also name a Neuron package or "
        "the Neuron pip repository are rewritten.",
        docs=(DOCS_BEST_PRACTICES, DOCS_QUICKSTART),
        triggers=TRIGGERS,
        kind="requirements",
        example=_example(
            "torch==2.1.2\ntorch-neuronx\n",
            f"# neuron-migrate(NM535): {PACKAGES['torch'].why}\ntorch>=2.13\ntorch-neuronx\n",
        ),
    )
