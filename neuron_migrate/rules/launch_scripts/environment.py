"""The environment-variable table of :mod:`~neuron_migrate.rules.env_vars`, applied to shell settings:
which settings are deleted, renamed or kept, reads of deleted variables, and the flags inside a variable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from neuron_migrate.migrate.shell import WORD, Command, ShellEdits, ShellScript
from neuron_migrate.rules.base import MANUAL, RuleMeta, all_rules
from neuron_migrate.rules.env_vars.common import (
    BY_HAND,
    DELETE,
    DELETE_BY_HAND,
    ENV_VARS,
    FLAG_VARIABLES,
    KEEP,
    RENAME,
    classify_env_var,
    drop_flags,
    flags_in,
)

if TYPE_CHECKING:
    from neuron_migrate.migrate.shell import Setting


@dataclass(frozen=True)
class EnvDecision:
    setting: Setting
    rule: str
    kind: str  # DELETE, BY_HAND, RENAME or KEEP (as in env_vars)
    message: str
    rename_to: str = ""
    value: str = ""  # KEEP: the value as it will be written
    review: bool = False  # a deletion a reviewer should know about
    todo: bool = False  # a deletion that leaves work in the code (DELETE_BY_HAND)


def decide_env(setting: Setting, flags_of: str = "") -> EnvDecision | None:
    """What the table says about one shell setting (the shell twin of the Python rules' ``_decide``).
    ``flags_of``: the setting is of a shell variable that flags variable (NEURON_CC_FLAGS) is set from."""
    name = setting.name
    action = classify_env_var(flags_of or name, setting.value)
    if action is None:
        return None
    if setting.unset:
        # Unsetting a variable nobody reads is dead code; a renamed variable is unset under its new name.
        if action.kind in (DELETE, DELETE_BY_HAND):
            return EnvDecision(setting, action.rule, DELETE, f"{name}: {action.message}")
        if action.kind == RENAME:
            return EnvDecision(setting, action.rule, RENAME, f"{name}: {action.message}", action.rename_to)
        return None
    if action.kind == DELETE_BY_HAND:
        return EnvDecision(setting, action.rule, DELETE, f"{name}: {action.message}", todo=True)
    if action.kind != KEEP:
        return EnvDecision(setting, action.rule, action.kind, f"{name}: {action.message}", action.rename_to)
    found = flags_in(setting.value or "", action.drop_flags)
    raw = setting.item.raw
    operator = "+=" if raw[len(name) :].startswith("+=") else "="
    edited = _without_flags(raw[len(name) + len(operator) :], action.drop_flags)
    if edited is None:
        return EnvDecision(setting, action.rule, BY_HAND, f"{name}: remove the XLA-era {', '.join(found)} by hand")
    inner = edited.strip("\"'").strip()
    into = f" (set into {flags_of})" if flags_of else ""
    if inner in (f"${name}", f"${{{name}}}") or (operator == "+=" and not inner):
        message = f"a {name} setting that only added XLA-era {', '.join(found)}{into}"
        return EnvDecision(setting, action.rule, DELETE, message, review=True)
    message = action.message.format(flags=", ".join(found))
    return EnvDecision(setting, action.rule, KEEP, f"{name}{into}: {message}" if flags_of else message, value=edited)


def _flag_sources(script: ShellScript) -> dict[str, str]:
    """Shell variables a flags variable is set from (``export NEURON_CC_FLAGS="$FLAGS"``) -> that variable."""
    out = {}
    for setting in script.settings():
        if setting.name not in FLAG_VARIABLES or setting.unset:
            continue
        item = setting.item
        for reference in script.references:
            if item.start <= reference.start < item.end and reference.name != setting.name:
                out.setdefault(reference.name, setting.name)
    return out


def _without_flags(raw: str, flags: tuple[str, ...]) -> str | None:
    """A value as written, minus ``flags``; None when its quoting is too mixed to edit safely."""
    quote = raw[:1] if raw[:1] in ("'", '"') else ""
    inner = raw[1:-1] if quote and raw.endswith(quote) and len(raw) > 1 else raw
    if quote and (not raw.endswith(quote) or len(raw) < 2 or re.search(r"(?<!\\)" + re.escape(quote), inner)):
        return None
    if not quote and re.search(r"['\"\\]", inner):
        return None
    dropped = drop_flags(inner, flags)
    if flags_in(dropped, flags):
        return None
    return f"{quote}{dropped}{quote}"


def _env_metas() -> dict[str, RuleMeta]:
    ids = {action.rule for action in ENV_VARS.values()}
    return {rule.meta.id: rule.meta for rule in all_rules() if rule.meta.id in ids}


def apply_env_table(script: ShellScript, ctx: ShellEdits) -> None:
    metas = {rule_id: meta for rule_id, meta in _env_metas().items() if rule_id in ctx.selected}
    if not metas:
        return
    by_command: dict[int, list[EnvDecision]] = {}
    sources = _flag_sources(script)
    # ``neuron_parallel_compile XLA_DOWNCAST_BF16=1 torchrun ...``: NM510 unwraps the command in the same pass,
    # so the variables it set for the wrapped command are settings too
    for setting in script.settings(wrappers=frozenset({"neuron_parallel_compile"})):
        decision = decide_env(setting)
        if decision is None and setting.name in sources and not setting.unset:
            decision = decide_env(setting, flags_of=sources[setting.name])
        if decision is not None and decision.rule in metas:
            by_command.setdefault(setting.command.index, []).append(decision)
    renamed: dict[str, str] = {}
    kept_names: set[str] = set()
    for index, decisions in by_command.items():
        command = script.commands[index]
        live = []
        for decision in decisions:
            meta = metas[decision.rule]
            item = decision.setting.item
            if ctx.suppressed(meta.id, (item.start, item.end), (command.start, command.start + 1)):
                ctx.skip(meta, item.start, item.end)
                kept_names.add(decision.setting.name)
            else:
                live.append(decision)
        _apply_deletions(script, ctx, command, [d for d in live if d.kind == DELETE], metas, kept_names)
        for decision in live:
            _apply_other(ctx, command, decision, metas[decision.rule], renamed, kept_names)
    for name, new in renamed.items():
        if name in kept_names:
            continue
        for reference in script.references:
            if reference.name == name:
                ctx.rewrite(reference.start, reference.end, new)
    _mark_gone_reads(script, ctx, metas, set(by_command))


_GONE_READ = "reads ${name}, which nothing sets any more ({why}): it is empty here; drop the code that depends on it"


def _mark_gone_reads(script: ShellScript, ctx: ShellEdits, metas: dict[str, RuleMeta], settings: set[int]) -> None:
    """A TODO where the script reads a variable whose settings are deleted (``if [ "$XLA_USE_BF16" = 1 ]``,
    a branch for ``neuron_parallel_compile``'s graph extraction): the test now sees an empty value."""
    for reference in script.references:
        action = classify_env_var(reference.name)
        if action is None or action.kind not in (DELETE, DELETE_BY_HAND) or action.rule not in metas:
            continue
        command = next((c for c in script.commands if c.start <= reference.start < c.end), None)
        if command is None or command.index in settings:
            continue  # `export XLA_FLAGS="$XLA_FLAGS ..."` goes with its setting
        span = (reference.start - 1, reference.end)
        meta = metas[action.rule]
        if ctx.suppressed(meta.id, span, (command.start, command.start + 1)):
            ctx.skip(meta, *span)
        else:
            ctx.manual(meta, *span, _GONE_READ.format(name=reference.name, why=action.message), command.start)


def _apply_deletions(
    script, ctx: ShellEdits, command: Command, deletions: list[EnvDecision], metas, kept_names
) -> None:
    if not deletions:
        return
    indexes = {command.items.index(d.setting.item) for d in deletions}
    whole = ctx.is_emptied(command, indexes)
    if whole and ctx.deletion(command) is None:
        for decision in deletions:
            item = decision.setting.item
            step = f"{decision.message}; delete this setting by hand (it is joined to another command)"
            ctx.manual(metas[decision.rule], item.start, item.end, step, command.start)
            kept_names.add(decision.setting.name)
        return
    if whole:
        ctx.delete(command)
    else:
        for i in sorted(indexes | _bare_env(command, indexes)):
            ctx.remove(("command", command.index), i)
    for decision in deletions:
        item, meta = decision.setting.item, metas[decision.rule]
        message = f"deleted {decision.message}"
        if decision.todo:
            ctx.report(meta, item.start, item.end, message, MANUAL, applied=True, fix=message, marker=message,
                       anchor=command.start)
        elif decision.review:
            ctx.review(meta, item.start, item.end, message, message, command.start)
        else:
            ctx.safe(meta, item.start, item.end, message)


def _bare_env(command: Command, removing: set[int]) -> set[int]:
    """``env`` itself, when every variable it set is being removed: ``env python x.py`` -> ``python x.py``."""
    items = command.items
    heads = [i for i, item in enumerate(items) if item.kind == WORD]
    if not heads or items[heads[0]].value != "env":
        return set()
    settings = []
    for i in heads[1:]:
        if not re.match(r"[A-Za-z_]\w*=", items[i].value):
            break
        settings.append(i)
    return {heads[0]} if settings and set(settings) <= removing and len(settings) < len(heads) - 1 else set()


def _apply_other(ctx: ShellEdits, command: Command, decision: EnvDecision, meta: RuleMeta, renamed, kept_names) -> None:
    setting, item = decision.setting, decision.setting.item
    if decision.kind == BY_HAND:
        ctx.manual(meta, item.start, item.end, decision.message, command.start)
        kept_names.add(setting.name)
    elif decision.kind == RENAME:
        ctx.rewrite(setting.name_start, setting.name_start + len(setting.name), decision.rename_to)
        renamed[setting.name] = decision.rename_to
        ctx.review(
            meta, item.start, item.end, decision.message, decision.message, command.start, after=decision.rename_to
        )
    elif decision.kind == KEEP:
        raw = item.raw
        operator = "+=" if raw[len(setting.name) :].startswith("+=") else "="
        value_start = item.start + len(setting.name) + len(operator)
        ctx.rewrite(value_start, item.end, decision.value)
        ctx.review(meta, item.start, item.end, decision.message, decision.message, command.start, after=decision.value)
