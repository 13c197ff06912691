"""Dockerfiles: what the shell rules cannot see (rules NM520, NM521).

Shell-form ``RUN``, ``RUN <<EOF`` scripts and ``ENV`` instructions go through the shell rules (see
``migrate/dockerfile.py``). The rest of a Dockerfile is not shell, and nothing in it is rewritten:
a base image of the XLA era (a Neuron Deep Learning Container with PyTorch before 2.13, or an
optimum-neuron image) gets a TODO naming the TorchNeuron release to move to, and any other
instruction that names a legacy variable, command or package (``CMD ["neuron_parallel_compile",
...]``, ``ARG XLA_USE_BF16=1``) gets a TODO, so nothing is left silently.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, provides, register
from neuron_migrate.rules.launch_scripts import legacy_names

if TYPE_CHECKING:
    from neuron_migrate.migrate.dockerfile import Dockerfile, Instruction
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


@register
class XlaEraBaseImage(Rule):
    """``FROM`` a Neuron container of the XLA era."""

    meta = RuleMeta(
        "NM521",
        "XLA-era Neuron base image",
        safety=MANUAL,
        risks=frozenset({"launch"}),
        summary=(
            "Neuron Deep Learning Containers with PyTorch before 2.13, and optimum-neuron images, hold the "
            "PyTorch/XLA stack; the migrated code needs a TorchNeuron container."
        ),
        docs=(DOCS_CONTAINERS, DOCS_BEST_PRACTICES),
        triggers=(b"neuron",),
        kind="dockerfile",
        example=Example(
            before="FROM public.ecr.aws/neuron/pytorch-training-neuronx:2.1.2-neuronx-py310-sdk2.20.0-ubuntu20.04\n",
            after=(
                "# TODO(neuron-migrate NM521): "
                + _IMAGE_STEP.format(
                    image="public.ecr.aws/neuron/pytorch-training-neuronx:2.1.2-neuronx-py310-sdk2.20.0-ubuntu20.04",
                    what="PyTorch 2.1",
                )
                + "\nFROM public.ecr.aws/neuron/pytorch-training-neuronx:2.1.2-neuronx-py310-sdk2.20.0-ubuntu20.04\n"
            ),
        ),
    )


@register
class HiddenLegacyInstruction(Rule):
    """An instruction the shell rules do not read that names a legacy API."""

    meta = RuleMeta(
        "NM520",
        "Dockerfile instruction names a legacy API",
        safety=MANUAL,
        summary=(
            "Exec-form RUN / CMD / ENTRYPOINT, ARG, a heredoc RUN that runs something other than the shell "
            "(RUN <<EOF python3) and an old-form ENV NAME value whose value has blanks are left as written; when "
            "one names a legacy variable, launcher or package it gets a TODO."
        ),
        docs=(DOCS_DOCKERFILE,),
        triggers=(b"neuron", b"XLA"),
        kind="dockerfile",
        example=Example(
            before='CMD ["neuron_parallel_compile", "torchrun", "train.py"]\n',
            after=(
                "# TODO(neuron-migrate NM520): "
                + _HIDDEN_STEP.format(keyword="CMD", names="neuron_parallel_compile")
                + '\nCMD ["neuron_parallel_compile", "torchrun", "train.py"]\n'
            ),
        ),
    )


@provides("dockerfile")
def apply_dockerfile_rules(dockerfile: Dockerfile, ctx: ShellEdits) -> None:
    for instruction in dockerfile.instructions:
        if instruction.keyword == "FROM":
            _check_image(dockerfile, instruction, ctx)
        elif instruction.form == "hidden":
            _check_hidden(dockerfile, instruction, ctx)


def _check_image(dockerfile: Dockerfile, instruction: Instruction, ctx: ShellEdits) -> None:
    meta = XlaEraBaseImage.meta
    match = _FROM.match(dockerfile.text, instruction.start)
    what = legacy_image(match.group(1)) if match else None
    if what is not None and meta.id in ctx.selected:
        _todo(ctx, meta, instruction, _IMAGE_STEP.format(image=match.group(1), what=what))


def _check_hidden(dockerfile: Dockerfile, instruction: Instruction, ctx: ShellEdits) -> None:
    meta = HiddenLegacyInstruction.meta
    names = legacy_names(dockerfile.text[instruction.start : instruction.end])
    if names and meta.id in ctx.selected:
        _todo(ctx, meta, instruction, _HIDDEN_STEP.format(keyword=instruction.keyword, names=", ".join(names)))


def _todo(ctx: ShellEdits, meta: RuleMeta, instruction: Instruction, step: str) -> None:
    span = (instruction.start, instruction.end)
    if ctx.suppressed(meta.id, span):
        ctx.skip(meta, *span)
    else:
        ctx.manual(meta, *span, step, instruction.start)
