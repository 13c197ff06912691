"""NM516: torch_xla xla_dist launcher replaced by torchrun"""

from __future__ import annotations

from neuron_migrate.migrate.shell import ShellScript
from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.launch_scripts.cli_steps import _XLA_DIST_STEP
from neuron_migrate.rules.launch_scripts.common import DOCS_DISTRIBUTED, DOCS_TORCHRUN, ShellRule, _manual
from neuron_migrate.rules.launch_scripts.launchers import launch_of


@register
class XlaDistLauncher(ShellRule):
    """``python -m torch_xla.distributed.xla_dist`` -> ``torchrun`` by hand (DOCS_TORCHRUN)."""

    meta = RuleMeta(
        "NM516",
        "torch_xla xla_dist launcher replaced by torchrun",
        safety=MANUAL,
        risks=frozenset({"launch", "collectives"}),
        summary="PyTorch/XLA's multi-host launcher has no TorchNeuron counterpart; torchrun starts the processes.",
        docs=(DOCS_TORCHRUN, DOCS_DISTRIBUTED),
        triggers=(b"xla_dist",),
        kind="shell",
        example=Example(
            before="python -m torch_xla.distributed.xla_dist --tpu=$TPU_NAME -- python train.py\n",
            after=(
                f"# TODO(neuron-migrate NM516): {_XLA_DIST_STEP}\n"
                "python -m torch_xla.distributed.xla_dist --tpu=$TPU_NAME -- python train.py\n"
            ),
        ),
    )

    def check(self, script: ShellScript) -> None:
        for command in script.commands:
            launch = launch_of(script, command)
            if launch is not None and launch.launcher == "xla_dist":
                _manual(self, command, _XLA_DIST_STEP)
