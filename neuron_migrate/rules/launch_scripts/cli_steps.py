"""Commands with a TorchNeuron counterpart to run by hand: ``optimum-cli neuron`` subcommands, the
``xla_dist`` launcher and lines no parser reads, with the legacy names that make them worth a TODO.
"""

from __future__ import annotations

import re

from neuron_migrate.migrate.shell import Command, ShellScript
from neuron_migrate.rules.env_vars.common import classify_env_var
from neuron_migrate.rules.launch_scripts.launchers import XLA_DIST, expand, strip_wrappers
from neuron_migrate.rules.requirements.common import NEURON_INDEX
from neuron_migrate.rules.requirements.common import TRIGGERS as REQUIREMENT_TRIGGERS


# `optimum-cli neuron SUBCOMMAND` -> the TorchNeuron counterpart.
NEURON_SUBCOMMANDS = {
    "cache": (
        "the Hugging Face Hub compile cache has no TorchNeuron counterpart: point TORCH_NEURONX_NEFF_CACHE_DIR at a "
        "local or NFS folder the machines share, then delete this step"
    ),
    "consolidate": (
        "checkpoints written with save_pretrained need no consolidation: delete this step; torch.distributed."
        "checkpoint shards convert with torch.distributed.checkpoint.format_utils.dcp_to_torch_save"
    ),
    "serve": "serve with vLLM Neuron instead: vllm serve {model} (the Neuron plugin of vLLM), then delete this step",
}


def _cli_words(script: ShellScript, command: Command) -> list[str]:
    return [a.value for a in strip_wrappers(expand(script, command))]


def _option(words: list[str], *names: str) -> str | None:
    for i, word in enumerate(words):
        for name in names:
            if word == name and i + 1 < len(words):
                return words[i + 1]
            if word.startswith(name + "="):
                return word[len(name) + 1 :]
    return None


_XLA_DIST_STEP = (
    "xla_dist is gone: launch the script with torchrun --nnodes N --nproc_per_node P (one process per NeuronCore) "
    "on every node; xla_dist's own options have no counterpart"
)
_UNPARSED_STEP = (
    "the shell parser could not read this line, so it was not migrated: it names {names}; "
    "migrate it by hand (or write it as plain commands) and run again"
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def legacy_names(text: str) -> list[str]:
    """The legacy variables, commands and packages ``text`` mentions, in order of appearance."""
    found: list[str] = []
    for match in _NAME.finditer(text):
        name = match.group(0)
        if name not in found and (classify_env_var(name, text) is not None or name in LEGACY_WORDS):
            found.append(name)
    return found


# Legacy commands, and the package names the requirement rules look for (not the Neuron pip
# repository: naming it is not legacy).
LEGACY_WORDS = frozenset(
    {"neuron_parallel_compile", "optimum-cli", "xla_dist", XLA_DIST}
    | {word.decode() for word in REQUIREMENT_TRIGGERS if word != NEURON_INDEX.encode()}
)
