"""NM515: optimum-cli neuron cache / consolidate / serve replaced"""

from __future__ import annotations

import os

from neuron_migrate.migrate.shell import ShellScript
from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.launch_scripts.cli_steps import NEURON_SUBCOMMANDS, _cli_words, _option
from neuron_migrate.rules.launch_scripts.common import DOCS_CLI, DOCS_DCP, DOCS_ENV, ShellRule, _manual


@register
class OptimumCliNeuron(ShellRule):
    """``optimum-cli neuron cache|consolidate|serve`` and their TorchNeuron counterparts (DOCS_CLI)."""

    meta = RuleMeta(
        "NM515",
        "optimum-cli neuron cache / consolidate / serve replaced",
        safety=MANUAL,
        risks=frozenset({"launch", "checkpoint-format"}),
        summary=(
            "The Hub compile cache becomes a shared TORCH_NEURONX_NEFF_CACHE_DIR, consolidation is not needed with "
            "save_pretrained, and serving moves to vLLM Neuron."
        ),
        docs=(DOCS_CLI, DOCS_ENV, DOCS_DCP),
        triggers=(b"optimum-cli",),
        kind="shell",
        example=Example(
            before="optimum-cli neuron cache synchronize\n",
            after=f"# TODO(neuron-migrate NM515): {NEURON_SUBCOMMANDS['cache']}\noptimum-cli neuron cache synchronize\n",
        ),
    )

    def check(self, script: ShellScript) -> None:
        for command in script.commands:
            words = _cli_words(script, command)
            if len(words) < 3 or os.path.basename(words[0]) != "optimum-cli" or words[1] != "neuron":
                continue
            step = NEURON_SUBCOMMANDS.get(words[2])
            if step is None:
                step = f"optimum-cli neuron {words[2]} has no TorchNeuron counterpart: delete this step"
            model = _option(words, "--model", "-m", "--model_id") or "MODEL"
            _manual(self, command, step.format(model=model))
