"""NM520: Dockerfile instruction names a legacy API"""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.dockerfiles.common import DOCS_DOCKERFILE, _HIDDEN_STEP, _todo
from neuron_migrate.rules.launch_scripts.cli_steps import legacy_names

if TYPE_CHECKING:
    from neuron_migrate.migrate.dockerfile import Dockerfile, Instruction
    from neuron_migrate.migrate.shell import ShellEdits


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


def _check_hidden(dockerfile: Dockerfile, instruction: Instruction, ctx: ShellEdits) -> None:
    meta = HiddenLegacyInstruction.meta
    names = legacy_names(dockerfile.text[instruction.start : instruction.end])
    if names and meta.id in ctx.selected:
        _todo(ctx, meta, instruction, _HIDDEN_STEP.format(keyword=instruction.keyword, names=", ".join(names)))
