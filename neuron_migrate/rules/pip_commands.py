"""``pip install`` commands in launch scripts and notebooks: the requirement rules on a command line.

A setup script or a notebook's first cell installs the stack with ``pip install torch-neuronx==2.1.*
torch-xla neuronx-distributed``; what becomes of each package there is exactly what becomes of it in
a requirements file, so the decision comes from the same table (:func:`plan_change` in
:mod:`~neuron_migrate.rules.requirements`) under the same rule ids (NM530-NM537): ``--select NM530``
means the same thing in ``requirements.txt``, ``run.sh`` and ``%pip install``.

Only the package arguments are edited; options, their values, ``-r`` files and anything the shell
expands (``$PKGS``) stay as written. A command left with nothing to install is deleted.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from neuron_migrate.migrate.shell import WORD, Command, ShellEdits, ShellScript
from neuron_migrate.rules.base import MANUAL, REVIEW, SAFE, RuleMeta, all_rules, rule_with_role
from neuron_migrate.rules.requirements import (
    CUDA_BUILD_REVIEW,
    CUDA_INDEX_RULE,
    INDEX_MARKER,
    PACKAGE_PREFIXES,
    PACKAGES,
    Change,
    Requirement,
    Stack,
    cuda_index,
    is_neuron_index,
    parse_requirement,
    plan_change,
)

PIP = re.compile(r"pip(?:\d+(?:\.\d+)?)?")
PYTHON = re.compile(r"python(?:\d+(?:\.\d+)?)?")
# pip install options that take the next word as their value (unless written --option=value).
VALUE_OPTIONS = frozenset(
    {
        "-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i", "--index-url", "--extra-index-url",
        "-f", "--find-links", "-t", "--target", "--prefix", "--root", "--src", "--upgrade-strategy", "--platform",
        "--python-version", "--implementation", "--abi", "-C", "--config-settings", "--global-option",
        "--no-binary", "--only-binary", "--progress-bar", "--trusted-host", "--cache-dir", "--log", "--proxy",
        "--retries", "--timeout", "--exists-action", "--cert", "--client-cert", "--report", "--python",
        "--root-user-action", "--index-strategy", "--extra-index", "--group",
    }
)  # fmt: skip
INDEX_OPTIONS = frozenset({"-i", "--index-url", "--extra-index-url", "--extra-index", "-f", "--find-links"})
# Characters that make the shell read a word as something else than a plain word.
PLAIN_WORD = re.compile(r"[\w.,=~!@+:/\[\]-]+")


@dataclass
class _Package:
    index: int  # the item's position in the command
    requirement: Requirement
    text: str  # the word as pip receives it (quotes removed)


def install_arguments(command: Command) -> int | None:
    """The item index just after ``install`` when ``command`` is a pip install, else None."""
    words = [(i, item.value) for i, item in enumerate(command.items) if item.kind == WORD]
    values = [os.path.basename(value) for _, value in words]
    for start in range(len(values)):
        if values[start] in ("sudo", "exec", "time", "nohup"):
            continue
        head = values[start:]
        if len(head) >= 2 and PIP.fullmatch(head[0]) and head[1] == "install":
            return words[start + 1][0] + 1
        if len(head) >= 3 and head[0] == "uv" and head[1:3] == ["pip", "install"]:
            return words[start + 2][0] + 1
        if len(head) >= 4 and PYTHON.fullmatch(head[0]) and head[1:4] == ["-m", "pip", "install"]:
            return words[start + 3][0] + 1
        return None
    return None


@dataclass
class _Install:
    packages: list[_Package]
    index_urls: list[str]
    # A requirements file, an editable install, a path or an argument the shell expands ($PKGS):
    # the command still installs something whatever becomes of the packages.
    other: bool = False


def _arguments(command: Command, first: int) -> _Install:
    install = _Install([], [])
    items = command.items
    i = first
    while i < len(items):
        item, value = items[i], items[i].value
        i += 1
        if item.kind != WORD:
            continue
        if value.startswith("-"):
            name, has_value, inline = value.partition("=")
            install.other |= name in ("-r", "--requirement", "-e", "--editable")
            if name in INDEX_OPTIONS:
                install.index_urls.append(inline if has_value else items[i].value if i < len(items) else "")
            if name in VALUE_OPTIONS and not has_value:
                i += 1
            continue
        requirement = None if "$" in value or "`" in item.raw else parse_requirement(value)
        if requirement is not None:
            install.packages.append(_Package(i - 1, requirement, value))
        else:
            install.other = True
    return install


def _index_rule() -> str:
    """The id of the rule that keeps a line pointing pip at the Neuron repository (its role, not its id)."""
    return rule_with_role("neuron-index").meta.id


def _rule_metas() -> dict[str, RuleMeta]:
    ids = {package.rule for package in (*PACKAGES.values(), *PACKAGE_PREFIXES.values())}
    ids |= {_index_rule(), CUDA_INDEX_RULE}
    return {rule.meta.id: rule.meta for rule in all_rules() if rule.meta.id in ids}


def apply_pip_installs(script: ShellScript, ctx: ShellEdits) -> None:
    metas = {rule_id: meta for rule_id, meta in _rule_metas().items() if rule_id in ctx.selected}
    if not metas:
        return
    for command in script.commands:
        first = install_arguments(command)
        if first is not None:
            _migrate_install(command, first, ctx, metas)
            if CUDA_INDEX_RULE in metas:
                _cuda_indexes(command, first, ctx, metas[CUDA_INDEX_RULE])


def _cuda_indexes(command: Command, first: int, ctx: ShellEdits, meta: RuleMeta) -> None:
    """``--index-url https://download.pytorch.org/whl/cu121`` -> ``.../whl/cpu`` (NM659)."""
    items = command.items
    for i in range(first, len(items)):
        item = items[i]
        name, has_value, inline = item.value.partition("=")
        if item.kind != WORD or name not in INDEX_OPTIONS:
            continue
        at = i if has_value else i + 1
        if at >= len(items) or "$" in items[at].raw:
            continue
        url = inline if has_value else items[at].value
        new = cuda_index(url)
        if new is None:
            continue
        target = items[at]
        if ctx.suppressed(meta.id, (item.start, target.end)):
            ctx.skip(meta, item.start, target.end)
            continue
        word = f"{name}={new}" if has_value else new
        ctx.replace(("command", command.index), at, _shell_word(word, target.raw))
        ctx.review(meta, item.start, target.end, f"{url} -> {new}", CUDA_BUILD_REVIEW, command.start, after=new)


def _migrate_install(command: Command, first: int, ctx: ShellEdits, metas: dict[str, RuleMeta]) -> None:
    install = _arguments(command, first)
    neuron_index = any(is_neuron_index(url) for url in install.index_urls)
    stack = Stack.of([p.requirement for p in install.packages], index_urls=neuron_index, selected=frozenset(metas))
    key = ("command", command.index)
    kept = changed = False
    for package in install.packages:
        change = plan_change(package.requirement, stack)
        item = command.items[package.index]
        if change is not None and ctx.suppressed(change.rule, (item.start, item.end)):
            ctx.skip(metas[change.rule], item.start, item.end)
            change = None
        if change is None:
            kept = True
            continue
        if change.kept:
            kept = True
            ctx.manual(metas[change.rule], item.start, item.end, change.message, command.start)
            continue
        changed = True
        marker = package.text[package.requirement.end : package.requirement.marker_end]
        replacement = tuple(r + marker for r in change.replacement)
        if replacement:
            kept = True
            ctx.replace(key, package.index, " ".join(_shell_word(r, item.raw) for r in replacement))
        else:
            ctx.remove(key, package.index)
        _record(ctx, metas[change.rule], change, item, replacement, command)
    if not changed:
        return
    if not (kept or install.other):
        _delete_install(ctx, command)
    index_rule = _index_rule()
    if neuron_index and index_rule in metas and not ctx.suppressed(index_rule, (command.start, command.end)):
        meta = metas[index_rule]
        ctx.report(
            meta, command.start, command.end, meta.title, REVIEW, applied=True, fix=INDEX_MARKER, marker=INDEX_MARKER,
            anchor=command.start,
        )


def _delete_install(ctx: ShellEdits, command: Command) -> None:
    """A pip install with nothing left to install fails ("You must give at least one requirement"):
    it goes, or becomes ``:`` when it is tied to other commands by ``&&`` or a pipe."""
    if ctx.deletion(command) is not None:
        ctx.delete(command)
    else:
        key = ("command", command.index)
        for index in range(len(command.items)):
            ctx.remove(key, index)
        ctx.replace(key, 0, ":")


def _record(
    ctx: ShellEdits, meta: RuleMeta, change: Change, item, replacement: tuple[str, ...], command: Command
) -> None:
    after = " ".join(replacement)
    if change.safety == SAFE or not change.marker:
        ctx.safe(meta, item.start, item.end, change.message, after=after)
    elif change.safety == REVIEW:
        ctx.review(meta, item.start, item.end, change.message, change.marker, command.start, after=after)
    else:
        ctx.report(
            meta, item.start, item.end, change.message, MANUAL, applied=True, after=after, fix=change.marker,
            marker=change.marker, anchor=command.start,
        )


def _shell_word(text: str, raw: str) -> str:
    """``text`` as one shell word, quoted like the word it replaces when it needs quoting at all."""
    if PLAIN_WORD.fullmatch(text):
        return text
    quote = raw[0] if raw[:1] in ("'", '"') else "'"
    if quote == "'" and "'" in text:
        quote = '"'
    return f"{quote}{text}{quote}"
