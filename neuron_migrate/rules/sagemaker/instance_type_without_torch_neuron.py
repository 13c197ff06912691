"""NM541: SageMaker instance type TorchNeuron does not run on"""

from __future__ import annotations

import re

import libcst as cst

from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.sagemaker.common import DOCS_SETUP, TORCH_NEURON_HARDWARE, string_text

# ml.<family>.<size> -> the family's name in the Neuron docs. Inf1 never ran torch-neuronx either.
FAMILIES = {"trn1": "Trn1", "trn1n": "Trn1", "inf2": "Inf2", "inf1": "Inf1"}
_INSTANCE = re.compile(r"ml\.(trn1n?|inf[12])\.[0-9a-z]+")
STEP = (
    "{hardware}: this {family} instance type has no TorchNeuron; run the migrated code on a Trn2 or Trn3 "
    "instance type (ml.trn2.48xlarge), or keep this job on its XLA-era code and container"
)


def instance_step(family: str) -> str:
    return STEP.format(hardware=TORCH_NEURON_HARDWARE, family=family)


@register
class InstanceTypeWithoutTorchNeuron(Rule):
    """``instance_type="ml.trn1.32xlarge"`` (or ``ml.trn1n.*``, ``ml.inf2.*``): the Neuron 2.33 setup
    pages list Trn2 and Trn3 as the instances TorchNeuron supports (DOCS_SETUP); Trn1 and Inf2 stay
    on the XLA-era torch-neuronx. The job needs another instance type, which is a cost and capacity
    decision, so the string is left as it is."""

    meta = RuleMeta(
        "NM541",
        "SageMaker instance type TorchNeuron does not run on",
        safety=MANUAL,
        risks=frozenset({"launch"}),
        summary=(
            "TorchNeuron supports Trn2 and Trn3 instances only: a SageMaker job or endpoint on ml.trn1.*, "
            "ml.trn1n.* or ml.inf2.* cannot run the migrated code."
        ),
        docs=(DOCS_SETUP,),
        triggers=(b"ml.trn1", b"ml.inf"),
        example=Example(
            before=(
                "from sagemaker.pytorch import PyTorch\n\n"
                'estimator = PyTorch(entry_point="train.py", instance_type="ml.trn1.32xlarge", instance_count=1)\n'
            ),
            after=(
                "from sagemaker.pytorch import PyTorch\n\n"
                f"# TODO(neuron-migrate NM541): {instance_step('Trn1')}\n"
                'estimator = PyTorch(entry_point="train.py", instance_type="ml.trn1.32xlarge", instance_count=1)\n'
            ),
        ),
    )

    def leave_SimpleString(self, original: cst.SimpleString, updated: cst.SimpleString):
        return self._check(original, updated)

    def leave_FormattedString(self, original: cst.FormattedString, updated: cst.FormattedString):
        return self._check(original, updated)

    def _check(self, original, updated):
        text = string_text(original, "ml.")
        match = _INSTANCE.fullmatch(text) if text else None
        if match is not None:
            # One marker per family: a list of Inf2 sizes needs one decision.
            self.ctx.manual(self.meta, original, instance_step(FAMILIES[match.group(1)]))
        return updated
