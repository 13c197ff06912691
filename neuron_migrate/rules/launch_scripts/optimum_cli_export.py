"""NM514: optimum-cli export neuron replaced by loading the checkpoint"""

from __future__ import annotations

import os

from neuron_migrate.migrate.shell import ShellScript
from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.launch_scripts.common import (
    DOCS_CLI,
    DOCS_ENV,
    DOCS_NO_XLA_INFERENCE,
    _EXPORT_EXAMPLE,
    ShellRule,
    _cli_words,
    _manual,
    export_replacement,
)


@register
class OptimumCliExport(ShellRule):
    """``optimum-cli export neuron`` has no TorchNeuron counterpart: the model compiles on first call (DOCS_CLI)."""

    meta = RuleMeta(
        "NM514",
        "optimum-cli export neuron replaced by loading the checkpoint",
        safety=MANUAL,
        risks=frozenset({"launch", "performance"}),
        summary=(
            'There is no ahead-of-time export: load the Hugging Face checkpoint with device_map="neuron" where it '
            "is used; it compiles on first call and the NEFF cache persists. LLM serving: vLLM Neuron."
        ),
        docs=(DOCS_CLI, DOCS_NO_XLA_INFERENCE, DOCS_ENV),
        triggers=(b"optimum-cli",),
        kind="shell",
        example=Example(
            before=(
                "optimum-cli export neuron --model meta-llama/Llama-3.2-1B \\\n"
                "    --batch_size 1 --sequence_length 512 --auto_cast_type bf16 llama-neuron/\n"
            ),
            after=(
                "# TODO(neuron-migrate NM514): " + export_replacement(_EXPORT_EXAMPLE.split()) + "\n"
                "optimum-cli export neuron --model meta-llama/Llama-3.2-1B \\\n"
                "    --batch_size 1 --sequence_length 512 --auto_cast_type bf16 llama-neuron/\n"
            ),
        ),
    )

    def check(self, script: ShellScript) -> None:
        for command in script.commands:
            words = _cli_words(script, command)
            if len(words) >= 3 and os.path.basename(words[0]) == "optimum-cli" and words[1:3] == ["export", "neuron"]:
                _manual(self, command, export_replacement(words))
