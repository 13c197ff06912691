"""The rule registry: every rule by id, by file kind and by role, and the hooks a rule family gives an adapter.

The engine and the file adapters (``neuron_migrate.migrate``) find rules here and never import a rule
module: the rule families (``neuron_migrate.rules``) register themselves when the registry first loads
them, the way plugins do. What an adapter needs from a family beyond its rule classes (the pass that
runs the shell rules over a script, the dependency table) is registered with :func:`provides`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from neuron_migrate.ruleapi.roles import ROLES, missing_members
from neuron_migrate.ruleapi.rule import Rule

# The package whose load_all() imports every rule family; named, not imported, because the families
# build on the engine's own modules (FileContext, ShellEdits) and the engine must not build on them.
RULES_PACKAGE = "neuron_migrate.rules"

# file kind -> what its adapter calls, as registered by the family that rewrites that kind
KIND_HOOKS = {
    "shell": "apply(script, edits, plan): every selected shell rule over one ShellScript",
    "dockerfile": "apply(dockerfile, edits): the rules for the instructions the shell rules do not read",
    "requirements": "parse, poetry, conda, stack, plan, is_neuron_index, cuda_index: the dependency table",
}

_REGISTRY: dict[str, type[Rule]] = {}
_BY_ROLE: dict[str, type[Rule]] = {}
_HOOKS: dict[str, Any] = {}

R = TypeVar("R", bound=type[Rule])
H = TypeVar("H")


def register(cls: R) -> R:
    rule_id = cls.meta.id
    if rule_id in _REGISTRY and _REGISTRY[rule_id] is not cls:
        raise ValueError(f"duplicate rule id {rule_id}: {cls.__name__} and {_REGISTRY[rule_id].__name__}")
    if cls.role:
        if cls.role not in ROLES:
            raise ValueError(f"{rule_id}: unknown role {cls.role!r}")
        holder = _BY_ROLE.get(cls.role)
        if holder is not None and holder is not cls:
            raise ValueError(f"role {cls.role!r} taken twice: {holder.meta.id} and {rule_id}")
        missing = missing_members(cls, cls.role)
        if missing:
            raise ValueError(f"{rule_id}: the {cls.role!r} role needs {', '.join(missing)} (ruleapi/roles.py)")
        _BY_ROLE[cls.role] = cls
    _REGISTRY[rule_id] = cls
    return cls


def provides(kind: str) -> Callable[[H], H]:
    """Registers what the adapter of ``kind`` calls (see KIND_HOOKS)."""
    if kind not in KIND_HOOKS:
        raise ValueError(f"no adapter hooks for file kind {kind!r}")

    def record(hooks: H) -> H:
        _HOOKS[kind] = hooks
        return hooks

    return record


_loaded = False


def _load() -> None:
    global _loaded
    if not _loaded:
        importlib.import_module(RULES_PACKAGE).load_all()
        _loaded = True


def all_rules() -> list[type[Rule]]:
    _load()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def get_rule(rule_id: str) -> type[Rule] | None:
    _load()
    return _REGISTRY.get(rule_id.upper())


def select_rules(select: Iterable[str] = (), ignore: Iterable[str] = ()) -> list[type[Rule]]:
    """Rule ids or prefixes (``NM1``, ``NM10``) like ruff's --select/--ignore; empty select = all."""
    select = [s.upper() for s in select]
    ignore = [s.upper() for s in ignore]
    chosen = []
    for cls in all_rules():
        rid = cls.meta.id
        if select and not any(rid.startswith(s) or s == "ALL" for s in select):
            continue
        if any(rid.startswith(s) for s in ignore):
            continue
        chosen.append(cls)
    return chosen


def rules_for(kind: str, selected: Iterable[type[Rule]] | None = None) -> list[type[Rule]]:
    """The rules (of ``selected``, or all) that rewrite files of ``kind``, in id order."""
    pool = all_rules() if selected is None else sorted(selected, key=lambda rule: rule.meta.id)
    return [rule for rule in pool if rule.meta.kind == kind]


def rule_with_role(role: str, selected: Iterable[type[Rule]] | None = None) -> type[Rule] | None:
    """The rule that plays ``role``, if it is among ``selected`` (all rules when None)."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}")
    _load()
    rule = _BY_ROLE.get(role)
    if rule is None or selected is None:
        return rule
    return rule if rule in set(selected) else None


def hooks_for(kind: str) -> Any:
    """What the family that rewrites ``kind`` registered for its adapter (see KIND_HOOKS)."""
    _load()
    try:
        return _HOOKS[kind]
    except KeyError:
        raise LookupError(f"no rule family provides the {kind!r} adapter hooks") from None
