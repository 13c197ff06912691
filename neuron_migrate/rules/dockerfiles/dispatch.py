"""The entry points of the dockerfiles rules: the code that drives several of them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuron_migrate.rules.base import provides
from neuron_migrate.rules.dockerfiles.cuda_base_image import check_cuda_image
from neuron_migrate.rules.dockerfiles.hidden_legacy_instruction import _check_hidden
from neuron_migrate.rules.dockerfiles.xla_era_base_image import _check_image

if TYPE_CHECKING:
    from neuron_migrate.migrate.dockerfile import Dockerfile
    from neuron_migrate.migrate.shell import ShellEdits


@provides("dockerfile")
def apply_dockerfile_rules(dockerfile: Dockerfile, ctx: ShellEdits) -> None:
    for instruction in dockerfile.instructions:
        if instruction.keyword == "FROM":
            _check_image(dockerfile, instruction, ctx)
            check_cuda_image(dockerfile, instruction, ctx)
        elif instruction.form == "hidden":
            _check_hidden(dockerfile, instruction, ctx)
