"""The entry points of the launch_scripts rules: the code that drives several of them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuron_migrate.migrate.shell import ShellEdits, ShellScript, escape_for_heredoc, heredoc_view
from neuron_migrate.rules.base import provides
from neuron_migrate.rules.launch_scripts.cli_steps import legacy_names
from neuron_migrate.rules.launch_scripts.common import ShellRule, _manual_span
from neuron_migrate.rules.launch_scripts.environment import apply_env_table
from neuron_migrate.rules.launch_scripts.heredocs import _HEREDOC_STEP, heredoc_kind
from neuron_migrate.rules.launch_scripts.unparsed_shell_line import UnparsedShellLine
from neuron_migrate.rules.pip_commands import apply_pip_installs

if TYPE_CHECKING:
    from neuron_migrate.migrate.engine import RulePlan


def apply_heredocs(script: ShellScript, ctx: ShellEdits, plan: RulePlan) -> None:
    """A heredoc holding a shell script goes through every rule as a script of its own (its new lines
    escaped when the heredoc expands); one holding Python or other text that names a legacy API gets
    a TODO above its command, as an unreadable line does (NM519)."""
    unread = next((rule for rule in plan.index.rules if rule is UnparsedShellLine), None)
    for (start, end), (operator, quoted) in zip(script.layout.heredocs, script.layout.heredoc_heads):
        body = script.text[start:end]
        kind = heredoc_kind(script, operator, body)
        if kind == "shell":
            inner = ShellScript(heredoc_view(script.text, start, end), script.path)
            edits = ShellEdits(inner, ctx.selected, ctx.no_comments, ctx.cell)
            if not quoted:
                edits.escape = escape_for_heredoc
            apply_rules(inner, edits, plan)
            ctx.adopt((start, end), edits)
            continue
        names = legacy_names(body) if kind != "message" else []
        if names and unread is not None:
            what = "Python" if kind == "python" else "text"
            line_end = script.line_end(operator)
            step = _HEREDOC_STEP.format(kind=what, names=", ".join(names))
            _manual_span(unread(ctx), (script.line_start(operator), line_end), step, operator)


# ----- the adapter's entry point ------------------------------------------------------------------------------


@provides("shell")
def apply_rules(script: ShellScript, ctx: ShellEdits, plan: RulePlan) -> None:
    """Every selected rule over one script: the environment table, the ``pip install`` commands, the
    launch rules in id order, then the scripts its heredocs hold."""
    apply_env_table(script, ctx)
    apply_pip_installs(script, ctx)
    for rule in sorted(plan.index.rules, key=lambda r: r.meta.id):
        if rule.meta.kind == "shell" and issubclass(rule, ShellRule):
            rule(ctx).check(script)
    apply_heredocs(script, ctx, plan)
