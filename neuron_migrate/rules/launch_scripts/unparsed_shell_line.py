"""NM519: shell line or heredoc left unmigrated names a legacy API"""

from __future__ import annotations

from neuron_migrate.migrate.shell import ShellScript
from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.launch_scripts.cli_steps import _UNPARSED_STEP, legacy_names
from neuron_migrate.rules.launch_scripts.common import DOCS_ENV, ShellRule, _manual_span


@register
class UnparsedShellLine(ShellRule):
    """A line bashlex cannot read (``&&`` inside ``$( )``, ``coproc``, bash extensions) that names a legacy
    command, package or variable: nothing silent is left behind, so it is reported and marked."""

    meta = RuleMeta(
        "NM519",
        "shell line or heredoc left unmigrated names a legacy API",
        safety=MANUAL,
        summary=(
            "Lines bashlex refuses are left byte for byte as they are, and so is a heredoc that is not a shell "
            "script (Python fed to `python -`, a file written with cat or tee). When such text mentions a legacy "
            "variable, launcher or package, it gets a TODO marker and a finding instead of silence."
        ),
        docs=("https://github.com/idank/bashlex", DOCS_ENV),
        kind="shell",
        example=Example(
            before='HERE=$(cd "$(dirname "$0")" && pwd); export PJRT_DEVICE=NEURON\n',
            after=(
                "# TODO(neuron-migrate NM519): "
                + _UNPARSED_STEP.format(names="PJRT_DEVICE")
                + '\nHERE=$(cd "$(dirname "$0")" && pwd); export PJRT_DEVICE=NEURON\n'
            ),
        ),
    )

    def check(self, script: ShellScript) -> None:
        for start, end in script.refused:
            names = legacy_names(script.text[start:end])
            if names:
                end = start + len(script.text[start:end].rstrip())
                _manual_span(self, (start, end), _UNPARSED_STEP.format(names=", ".join(names)), start)
