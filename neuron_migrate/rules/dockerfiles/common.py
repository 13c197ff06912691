"""What the dockerfiles rules share: helpers, constants and base classes."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from neuron_migrate.rules.base import RuleMeta

if TYPE_CHECKING:
    from neuron_migrate.migrate.dockerfile import Instruction
    from neuron_migrate.migrate.shell import ShellEdits

NEURON_DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest"
DOCS_CONTAINERS = f"{NEURON_DOCS}/containers/index.html"
DOCS_BEST_PRACTICES = f"{NEURON_DOCS}/torch/reference/best-practices-pytorch-neuron.html"
DOCS_DOCKERFILE = "https://docs.docker.com/reference/dockerfile/"
# TorchNeuron runs on PyTorch 2.13 and later (Neuron SDK 2.33+).
FIRST_NATIVE_TORCH = (2, 13)
_FROM = re.compile(r"[ \t]*FROM(?:[ \t]+--\S+)*[ \t]+(\S+)", re.IGNORECASE)
_TAG_VERSION = re.compile(r"(\d+)\.(\d+)")
_IMAGE_STEP = (
    "{image} ships the XLA-era Neuron stack ({what}): base the image on a TorchNeuron container "
    "(Neuron SDK 2.33+, PyTorch 2.13/2.14, torch-neuronx 2.14+)"
)
_HIDDEN_STEP = (
    "this {keyword} instruction names {names}, which the rewrite does not change here: migrate it by hand "
    "(a shell-form RUN, a RUN <<EOF script or ENV NAME=value is migrated automatically)"
)


def legacy_image(image: str) -> str | None:
    """What makes ``image`` (``repo/name:tag``) an XLA-era Neuron image, or None."""
    name, _, tag = image.rpartition(":") if ":" in image.rsplit("/", 1)[-1] else (image, "", "")
    name = name.lower()
    if "optimum-neuron" in name:
        return "optimum-neuron"
    if "neuron" not in name:
        return None
    version = _TAG_VERSION.match(tag)
    if version and (int(version.group(1)), int(version.group(2))) < FIRST_NATIVE_TORCH:
        return f"PyTorch {version.group(0)}"
    return None


def _todo(ctx: ShellEdits, meta: RuleMeta, instruction: Instruction, step: str) -> None:
    span = (instruction.start, instruction.end)
    if ctx.suppressed(meta.id, span):
        ctx.skip(meta, *span)
    else:
        ctx.manual(meta, *span, step, instruction.start)
