"""NM537: Neuron pip repository kept"""

from __future__ import annotations

from neuron_migrate.rules.base import REVIEW, RuleMeta, register
from neuron_migrate.rules.requirements.common import (
    DOCS_QUICKSTART,
    INDEX_MARKER,
    TRIGGERS,
    _INDEX_LINE,
    RequirementRule,
    _example,
)


@register
class NeuronIndexKept(RequirementRule):
    """The Neuron pip repository stays; it gets a review marker when the file's pins were migrated."""

    role = "neuron-index"
    MARKER = INDEX_MARKER

    meta = RuleMeta(
        "NM537",
        "Neuron pip repository kept",
        safety=REVIEW,
        summary="TorchNeuron is installed from the same repository. The marker is added only to a file whose "
        "requirements were migrated in the same run, so a checked marker, once deleted, stays deleted.",
        docs=(DOCS_QUICKSTART,),
        triggers=TRIGGERS,
        kind="requirements",
        example=_example(
            _INDEX_LINE + "torch-xla==2.1.*\n",
            f"# neuron-migrate(NM537): {INDEX_MARKER}\n" + _INDEX_LINE + "torch>=2.13\n",
        ),
    )
