"""NM530: torch-xla / libneuronxla requirements removed"""

from __future__ import annotations

from neuron_migrate.rules.base import SAFE, RuleMeta, register
from neuron_migrate.rules.requirements.common import (
    DOCS_RESOURCES,
    DOCS_TRANSITION,
    TRIGGERS,
    RequirementRule,
    _example,
)


@register
class TorchXlaRemoved(RequirementRule):
    """torch-xla and libneuronxla go: TorchNeuron is a backend of stock PyTorch (DOCS_RESOURCES)."""

    meta = RuleMeta(
        "NM530",
        "torch-xla / libneuronxla requirements removed",
        safety=SAFE,
        summary="The PyTorch/XLA packages have no place next to TorchNeuron; torch>=2.13 is added when nothing "
        "else requires torch.",
        docs=(DOCS_RESOURCES, DOCS_TRANSITION),
        triggers=TRIGGERS,
        kind="requirements",
        example=_example(
            "torch-xla==2.1.*\nlibneuronxla==2.0.965\ndatasets\n",
            "torch>=2.13\ndatasets\n",
        ),
    )
