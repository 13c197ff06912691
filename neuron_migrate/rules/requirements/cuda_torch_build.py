"""NM659: CUDA builds of PyTorch -> its CPU build"""

from __future__ import annotations

from neuron_migrate.rules.base import REVIEW, RuleMeta, register
from neuron_migrate.rules.requirements.common import (
    CUDA_BUILD_REVIEW,
    CUDA_INDEX_RULE,
    DOCS_QUICKSTART,
    RequirementRule,
    _example,
)


@register
class CudaTorchBuild(RequirementRule):
    """The CUDA wheel index of PyTorch (``download.pytorch.org/whl/cu121``) and CUDA local versions
    (``torch==2.3.1+cu121``) -> the CPU build, which TorchNeuron extends with the neuron device."""

    source = "cuda"
    meta = RuleMeta(
        CUDA_INDEX_RULE,
        "CUDA builds of PyTorch -> its CPU build",
        safety=REVIEW,
        summary="A CUDA wheel index of PyTorch becomes its CPU index, and a `+cuXXX` local version `+cpu`, in "
        "requirements files and pip install lines: a Trainium host needs no CUDA libraries, and torch-neuronx "
        "adds the neuron device to the CPU build.",
        docs=(DOCS_QUICKSTART,),
        triggers=(b"download.pytorch.org/whl/", b"+cu1"),
        kind="requirements",
        example=_example(
            "torch==2.3.1+cu121\n",
            f"# neuron-migrate({CUDA_INDEX_RULE}): {CUDA_BUILD_REVIEW}\ntorch==2.3.1+cpu\n",
        ),
    )
