"""NM658: CUDA runtime wheels removed"""

from __future__ import annotations

from neuron_migrate.rules.base import SAFE, RuleMeta, register
from neuron_migrate.rules.requirements.common import DOCS_RESOURCES, RequirementRule, _example
from neuron_migrate.rules.requirements.cuda_only_packages import _words


@register
class CudaRuntimeWheels(RequirementRule):
    """``nvidia-cublas-cu12``, ``nvidia-cudnn-cu12``, ``nvidia-nccl-cu12``...: the CUDA runtime a CUDA build of
    torch installs itself. No code imports them, so they go."""

    source = "cuda"
    meta = RuleMeta(
        "NM658",
        "CUDA runtime wheels removed",
        safety=SAFE,
        summary="The nvidia-* CUDA runtime wheels (cuBLAS, cuDNN, NCCL, ...) pinned next to torch are removed: "
        "TorchNeuron needs none of them.",
        docs=(DOCS_RESOURCES,),
        triggers=_words("NM658"),
        kind="requirements",
        example=_example("torch==2.5.1\nnvidia-cudnn-cu12==9.1.0.70\n", "torch==2.5.1\n"),
    )
