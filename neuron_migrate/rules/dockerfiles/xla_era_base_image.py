"""NM521: XLA-era Neuron base image"""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.dockerfiles.common import (
    DOCS_BEST_PRACTICES,
    DOCS_CONTAINERS,
    _FROM,
    _IMAGE_STEP,
    _todo,
    legacy_image,
)

if TYPE_CHECKING:
    from neuron_migrate.migrate.dockerfile import Dockerfile, Instruction
    from neuron_migrate.migrate.shell import ShellEdits


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


def _check_image(dockerfile: Dockerfile, instruction: Instruction, ctx: ShellEdits) -> None:
    meta = XlaEraBaseImage.meta
    match = _FROM.match(dockerfile.text, instruction.start)
    what = legacy_image(match.group(1)) if match else None
    if what is not None and meta.id in ctx.selected:
        _todo(ctx, meta, instruction, _IMAGE_STEP.format(image=match.group(1), what=what))
