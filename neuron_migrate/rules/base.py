"""What a rule is: metadata, the hooks the engine calls, and the registry.

A rule is a small class. It declares which qualified names it handles (``calls`` for call sites,
``references`` for bare attribute/name uses) and may define ``leave_<NodeType>`` hooks for the
few shapes a table cannot express (a ``with torch_xla.step():`` block, a loop over a device loader).
The engine walks each file once and hands every node only to the rules interested in it.

Rules never write files, never add imports by hand and never insert comments themselves: they ask
the :class:`~neuron_migrate.migrate.context.FileContext` (``self.ctx``) for that, so suppression
comments, ``--no-comments`` and the report all work the same way for every rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from neuron_migrate.report.model import MANUAL, REVIEW, RISK_TAGS, SAFE, SAFETIES

if TYPE_CHECKING:
    import libcst as cst

    from neuron_migrate.migrate.context import FileContext

__all__ = [
    "MANUAL",
    "REVIEW",
    "SAFE",
    "Example",
    "Rule",
    "RuleMeta",
    "StatementReplacement",
    "all_rules",
    "get_rule",
    "register",
]


@dataclass(frozen=True)
class Example:
    """The before/after pair shown by ``neuron-migrate rules ID``; the test suite runs it too."""

    before: str
    after: str


@dataclass(frozen=True)
class RuleMeta:
    id: str
    title: str
    safety: str
    risks: frozenset[str] = frozenset()
    summary: str = ""
    docs: tuple[str, ...] = ()
    # Byte strings whose presence in a file makes this rule worth parsing for.
    triggers: tuple[bytes, ...] = (b"torch_xla",)
    example: Example | None = None
    # The file kind the rule rewrites (see migrate.discover.kind_of): its example and fixtures go
    # through that kind's adapter.
    kind: str = "python"

    def __post_init__(self) -> None:
        if self.safety not in SAFETIES:
            raise ValueError(f"{self.id}: unknown safety {self.safety!r}")
        unknown = set(self.risks) - set(RISK_TAGS)
        if unknown:
            raise ValueError(f"{self.id}: unknown risk tags {sorted(unknown)}")


@dataclass
class StatementReplacement:
    """Returned by a call handler to replace the whole statement the call stands in.

    ``statements`` empty means "delete the statement" (its comments move to the next line). The
    engine only applies it when the call is the entire value of a one-statement line
    (``f()``, ``x = f()``, ``return f()``); anywhere else the call is reported as manual with
    ``fallback`` as the next step. A ``leave_SimpleStatementLine`` hook may return it as well, to
    replace or delete its own line (deleting is then always applied: the hook knows the line).
    """

    statements: list[cst.BaseStatement]
    fallback: str = ""


class Rule:
    meta: ClassVar[RuleMeta]
    # qualified name -> name of the method that handles a call to it
    calls: ClassVar[dict[str, str]] = {}
    # qualified name -> name of the method that handles a bare reference (Attribute or Name)
    references: ClassVar[dict[str, str]] = {}
    # True when the rule's TODO markers can be about an edit it made (work the migration left,
    # such as a loader that no longer moves batches), not only about legacy code left below them:
    # a rerun cannot tell those from a TODO whose code was edited away, so it keeps them all.
    follow_up_todos: ClassVar[bool] = False
    # Qualified-name prefixes the rule's ``leave_Call``/``leave_Attribute``/``leave_Name`` hooks answer:
    # when set, the engine calls those hooks only for a node named under one of them (a call by its
    # callee), instead of for every node of that type.
    prefixes: ClassVar[tuple[str, ...]] = ()

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx

    @classmethod
    def node_hooks(cls) -> list[str]:
        """Names of the CST node types this rule has ``visit_``/``leave_`` hooks for."""
        names = set()
        for attr in dir(cls):
            for prefix in ("visit_", "leave_"):
                if attr.startswith(prefix) and attr[len(prefix) :][:1].isupper():
                    names.add(attr)
        return sorted(names)


_REGISTRY: dict[str, type[Rule]] = {}


def register(cls: type[Rule]) -> type[Rule]:
    rule_id = cls.meta.id
    if rule_id in _REGISTRY and _REGISTRY[rule_id] is not cls:
        raise ValueError(f"duplicate rule id {rule_id}: {cls.__name__} and {_REGISTRY[rule_id].__name__}")
    _REGISTRY[rule_id] = cls
    return cls


def all_rules() -> list[type[Rule]]:
    from neuron_migrate import rules as _rules_package

    _rules_package.load_all()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def get_rule(rule_id: str) -> type[Rule] | None:
    all_rules()
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


# The hooks a rule with ``prefixes`` gets only for the nodes named under them.
NAMED_HOOKS = frozenset({"leave_Call", "leave_Attribute", "leave_Name"})


@dataclass
class RuleIndex:
    """Dispatch tables the engine builds once per run from the selected rule classes."""

    rules: list[type[Rule]]
    calls: dict[str, list[tuple[type[Rule], str]]] = field(default_factory=dict)
    references: dict[str, list[tuple[type[Rule], str]]] = field(default_factory=dict)
    # hook name -> the rules called with every node of that type
    hooks: dict[str, list[type[Rule]]] = field(default_factory=dict)
    # hook name -> qualified-name prefix -> the rules called with the nodes named under that prefix
    named: dict[str, dict[str, list[type[Rule]]]] = field(default_factory=dict)
    # rule -> its place in ``rules``: hooks run in that order, whichever table they come from
    order: dict[type[Rule], int] = field(default_factory=dict)

    @classmethod
    def build(cls, rules: list[type[Rule]]) -> RuleIndex:
        index = cls(rules=list(rules))
        for position, rule in enumerate(rules):
            index.order[rule] = position
            for qname, method in rule.calls.items():
                index.calls.setdefault(qname, []).append((rule, method))
            for qname, method in rule.references.items():
                index.references.setdefault(qname, []).append((rule, method))
            for hook in rule.node_hooks():
                if hook in NAMED_HOOKS and rule.prefixes:
                    by_prefix = index.named.setdefault(hook, {})
                    for prefix in rule.prefixes:
                        by_prefix.setdefault(prefix, []).append(rule)
                else:
                    index.hooks.setdefault(hook, []).append(rule)
        return index

    def named_rules(self, hook: str, qnames) -> list[type[Rule]]:
        """The rules whose ``hook`` answers a node with these qualified names: those with a prefix
        equal to a name or to one of its dotted parents, in rule order."""
        by_prefix = self.named.get(hook)
        if not by_prefix:
            return []
        found: set[type[Rule]] = set()
        for qname in qnames:
            end = len(qname)
            while end > 0:
                found.update(by_prefix.get(qname[:end], ()))
                end = qname.rfind(".", 0, end)
        return sorted(found, key=self.order.__getitem__)

    def triggers(self) -> tuple[bytes, ...]:
        words: set[bytes] = set()
        for rule in self.rules:
            words.update(rule.meta.triggers)
        return tuple(sorted(words))
