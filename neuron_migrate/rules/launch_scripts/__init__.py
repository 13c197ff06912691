"""Launch scripts: the shell side of the migration.

What changes in a ``run.sh`` is small and mostly a matter of tables: the ``neuron_parallel_compile``
wrapper goes (NM510), a Hugging Face training launch gets ``HF_DEACTIVATE_ASYNC_LOAD=1`` (NM511),
the ``NeuronTrainingArguments``-only flags on its command line go (NM512) and the Trainer is told to
compile with the neuron backend instead (NM513), and flags of fields transformers 5 removed or
renamed follow the field map of :mod:`~neuron_migrate.rules.hf_fields` (NM517); ``optimum-cli``
steps (NM514, NM515) and the ``xla_dist`` launcher (NM516) become TODOs with their TorchNeuron
counterparts (DOCS_CLI). Legacy environment variables are decided by the one table of
:mod:`~neuron_migrate.rules.env_vars`, under the same rule ids as in Python code, so a script and a
module never disagree about a variable. A heredoc that holds a shell script goes through all of it.

The rules read a :class:`~neuron_migrate.migrate.shell.ShellScript` (commands, arrays, variables,
positions) and ask :class:`~neuron_migrate.migrate.shell.ShellEdits` for every edit, marker and
finding; they never touch the text themselves.
"""

from __future__ import annotations

from neuron_migrate.rules.launch_scripts.common import ASYNC_LOAD, COMPILE_FLAGS
from neuron_migrate.rules.launch_scripts.dispatch import apply_heredocs, apply_rules
from neuron_migrate.rules.launch_scripts.launchers import launch_of

__all__ = [
    "ASYNC_LOAD",
    "COMPILE_FLAGS",
    "apply_heredocs",
    "apply_rules",
    "launch_of",
]
