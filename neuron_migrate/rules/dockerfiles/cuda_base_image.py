"""NM656: CUDA base image -> a TorchNeuron container"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.cuda_launch.common import DOCS_DLC, DOCS_DLC_IMAGES
from neuron_migrate.rules.dockerfiles.common import _FROM, _todo

if TYPE_CHECKING:
    from neuron_migrate.migrate.dockerfile import Dockerfile, Instruction
    from neuron_migrate.migrate.shell import ShellEdits

# The repository of the Neuron training containers; which tag holds TorchNeuron changes with each release, so
# the marker names the repository and where its tags are listed, never a tag.
NEURON_TRAINING_IMAGE = "public.ecr.aws/neuron/pytorch-training-neuronx"
STEP = (
    "{image} is a CUDA image: base this one on a TorchNeuron Deep Learning Container ("
    f"{NEURON_TRAINING_IMAGE}, a tag with torch-neuronx 2.14+ from the list at {DOCS_DLC_IMAGES}), or install "
    "torch-neuronx into a plain OS image"
)
# NVIDIA's own registries, and the CUDA builds of the PyTorch images (their tags name the CUDA release).
_CUDA_NAME = re.compile(r"(?:^|/)nvidia/|^nvcr\.io/", re.IGNORECASE)
_CUDA_TAG = re.compile(r"cuda|(?:^|[-_.])cu\d{2,3}(?:$|[-_.])", re.IGNORECASE)


def cuda_image(image: str) -> bool:
    """Whether ``image`` (``registry/name:tag``) is an NVIDIA or CUDA-build image."""
    if "$" in image:
        return False
    name, _, tag = image.rpartition(":") if ":" in image.rsplit("/", 1)[-1] else (image, "", "")
    return bool(_CUDA_NAME.search(name) or _CUDA_TAG.search(tag))


@register
class CudaBaseImage(Rule):
    """``FROM nvidia/cuda:...``, ``FROM nvcr.io/nvidia/pytorch:...``, ``FROM pytorch/pytorch:...-cuda...``."""

    source = "cuda"
    meta = RuleMeta(
        "NM656",
        "CUDA base image -> a TorchNeuron container",
        safety=MANUAL,
        risks=frozenset({"launch"}),
        summary=(
            "An image built on NVIDIA's CUDA or NGC images, or on a CUDA build of PyTorch, gets a TODO naming "
            "the Neuron training container repository; the tag is the user's pick from the published list."
        ),
        docs=(DOCS_DLC, DOCS_DLC_IMAGES),
        triggers=(b"nvidia", b"cuda", b"nvcr.io", b"cu1"),
        kind="dockerfile",
        example=Example(
            before="FROM nvidia/cuda:12.1.0-cudnn8-devel-ubuntu22.04\n",
            after=(
                "# TODO(neuron-migrate NM656): "
                + STEP.format(image="nvidia/cuda:12.1.0-cudnn8-devel-ubuntu22.04")
                + "\nFROM nvidia/cuda:12.1.0-cudnn8-devel-ubuntu22.04\n"
            ),
        ),
    )


def check_cuda_image(dockerfile: Dockerfile, instruction: Instruction, ctx: ShellEdits) -> None:
    meta = CudaBaseImage.meta
    if meta.id not in ctx.selected:
        return
    match = _FROM.match(dockerfile.text, instruction.start)
    if match and cuda_image(match.group(1)):
        _todo(ctx, meta, instruction, STEP.format(image=match.group(1)))
