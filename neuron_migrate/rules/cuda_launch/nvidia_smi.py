"""NM653: nvidia-smi -> neuron-ls / neuron-top"""

from __future__ import annotations

import os

from neuron_migrate.migrate.shell import ShellScript
from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.cuda_launch.common import DOCS_TOOLS, CudaShellRule
from neuron_migrate.rules.launch_scripts.common import _manual

STEP = (
    "nvidia-smi sees NVIDIA GPUs only: on Trainium neuron-ls lists the devices and NeuronCores, neuron-top shows "
    "their use and memory; replace this command (and whatever parses its output)"
)


@register
class NvidiaSmi(CudaShellRule):
    """A command that runs ``nvidia-smi`` gets a TODO naming the Neuron tools."""

    meta = RuleMeta(
        "NM653",
        "nvidia-smi -> neuron-ls / neuron-top",
        safety=MANUAL,
        summary="nvidia-smi has no output on Trainium; neuron-ls and neuron-top show the devices and their use. "
        "Their output differs, so the command is left for a human.",
        docs=(DOCS_TOOLS,),
        triggers=(b"nvidia-smi",),
        kind="shell",
        example=Example(
            before="nvidia-smi\npython train.py\n",
            after=f"# TODO(neuron-migrate NM653): {STEP}\nnvidia-smi\npython train.py\n",
        ),
    )

    def check(self, script: ShellScript) -> None:
        for command in script.commands:
            if any(os.path.basename(word.value) == "nvidia-smi" for word in command.words):
                _manual(self, command, STEP)
