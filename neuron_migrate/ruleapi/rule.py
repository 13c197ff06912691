"""What a rule is: its metadata, the hooks the engine calls, and the statement replacement it may return.

A rule is a small class. It declares which qualified names it handles (``calls`` for call sites,
``references`` for bare attribute/name uses) and may define ``leave_<NodeType>`` hooks for the
few shapes a table cannot express (a ``with torch_xla.step():`` block, a loop over a device loader).
The engine walks each file once and hands every node only to the rules interested in it.

Rules never write files, never add imports by hand and never insert comments themselves: they ask
their context (``self.ctx``, a :class:`~neuron_migrate.ruleapi.context.RuleContext`: the engine's
FileContext for a Python rule) for that, so suppression comments, ``--no-comments`` and the report all
work the same way for every rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from neuron_migrate.report.model import RISK_TAGS, SAFETIES

if TYPE_CHECKING:
    import libcst as cst

    from neuron_migrate.ruleapi.context import RuleContext


# What a run can migrate from: the legacy Neuron stack (always) and, when asked, CUDA code.
SOURCES = ("legacy", "cuda")


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


@dataclass(frozen=True)
class Edit:
    """What a handler returns when it changes code: the replacement and what the report says of it.

    ``replacement`` is the new node (or a :class:`StatementReplacement`). ``message`` describes the
    edit (the rule title when empty). ``review`` asks a human to check it: the finding is reviewed
    and a review marker goes next to it. ``safe`` says the edit is safe here though the rule is
    usually reviewed. ``todo`` is work the edit leaves (a deleted setting whose effect must now come
    from code): the finding is manual and a TODO marker with that next step goes next to it. That TODO
    begins with what was done ("deleted X: ...", the prefix is added when missing): a rerun keeps such a
    marker, while it drops a TODO whose code below no longer holds what it was about.

    A handler that changes nothing returns the node it was given, after ``self.ctx.manual(self.meta, ...)``
    or ``self.ctx.report(self.meta, ...)`` when it has something to say (the rule is named in every call:
    the context keeps no current rule); a bare node return is an edit with the rule's own title and safety.
    """

    replacement: Any
    message: str = ""
    review: str = ""
    safe: bool = False
    todo: str = ""

    def __post_init__(self) -> None:
        if self.review and self.safe:
            raise ValueError("an edit is either reviewed or confirmed safe, not both")


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
    # Other file kinds whose text this rule's table edits too (the environment-variable rules are
    # Python rules that also rewrite `export` lines): those files are scanned for its triggers.
    also_edits: ClassVar[tuple[str, ...]] = ()
    # Qualified-name prefixes the rule's ``leave_Call``/``leave_Attribute``/``leave_Name`` hooks answer:
    # when set, the engine calls those hooks only for a node named under one of them (a call by its
    # callee), instead of for every node of that type.
    prefixes: ClassVar[tuple[str, ...]] = ()
    # The part this rule plays for the engine or an adapter (one of roles.ROLES), which finds it by
    # role rather than by id and reads what that role's Protocol declares; empty for the rules that only
    # rewrite what their tables name.
    role: ClassVar[str] = ""
    # The code the rule migrates (one of SOURCES): "legacy" Neuron code, always on, or "cuda" code, whose rules
    # run only when asked for (``rewrite --from cuda``), since they change code that runs as it is elsewhere.
    source: ClassVar[str] = "legacy"
    # Imports the rule's rewrite leaves unread (``from torch.cuda.amp import GradScaler`` once the scaler is gone):
    # the engine drops each once nothing in the file reads it any more.
    retired_imports: ClassVar[tuple[str, ...]] = ()

    # What the rule asks of the file it runs on. A shell or Dockerfile rule gets its adapter's edits
    # (ShellEdits) instead, through the base class of its family.
    ctx: RuleContext

    def __init__(self, ctx: RuleContext) -> None:
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


def ordered_risks(risks) -> list[str]:
    """Risk tags in the canonical order of the report's checklist."""
    return [tag for tag in RISK_TAGS if tag in risks]


def rule_dict(rule: type[Rule]) -> dict[str, Any]:
    """A rule's metadata as plain data, for reports and ``neuron-migrate rules --format json``."""
    meta = rule.meta
    example = meta.example
    return {
        "id": meta.id,
        "title": meta.title,
        "safety": meta.safety,
        "risks": ordered_risks(meta.risks),
        "summary": meta.summary,
        "docs": list(meta.docs),
        "example": None if example is None else {"before": example.before, "after": example.after},
    }
