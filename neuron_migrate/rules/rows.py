"""Rows: the legacy names a table can answer, in one declarative form.

Most legacy names need no code of their own: the answer is a fixed next step, a rename or a removal.
Like TorchFix's deprecation table and ruff's NumPy 2 table, those names are data::

    Row("torch_xla.distributed.spmd.mark_sharding", "NM135", Manual(TENSOR_STEP))
    Row("torch_xla.amp.syncfree.AdamW", "NM151", Rename("torch.optim.AdamW"))
    Row("torch_xla.experimental.eager_mode", "NM115", Remove(fallback="drop the call; TorchNeuron is always eager"))

A rule takes its rows by declaring ``rows = FAMILY_ROWS`` (a family's table, kept in
``rules/tables/<family>.py``); it keeps the rows carrying its own id, and its ``calls`` and
``references`` are derived from them, all answered by :func:`answer_row`. The rule's
hand-written handlers stay for the names that need code; a name is answered by one or the other.

A row's name may end in ``.*``: the package itself and every name under it. The engine dispatches
exact names, so a prefix row answers the names listed in the rule's ``row_names``, or, in a rule that
finds the uses under its own ``prefixes`` (LegacyUseRule), the uses that rule hands it; the lookup
in :func:`row_for` prefers an exact row, then the longest prefix.

A name may also hold ``.**.``: any module path, none included, for a package that exports one API
from several modules (``neuronx_distributed.**.clip_grad_norm``). Only a rule that finds the uses under
its own ``prefixes`` can take such a row, and the family decides which of its rows answers a use
(``rules/neuronx_distributed/common.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from neuron_migrate.ruleapi import Edit, StatementReplacement

if TYPE_CHECKING:
    from neuron_migrate.ruleapi import RuleContext
    from neuron_migrate.rules.base import Rule

__all__ = ["ANY_PATH", "Manual", "Remove", "Rename", "Row", "answer_row", "install", "row_for", "rows_for_names"]


@dataclass(frozen=True)
class Manual:
    """Nothing changes; a TODO marker on the line says the next step."""

    step: str
    answers_calls: ClassVar[bool] = True
    answers_references: ClassVar[bool] = True

    def apply(self, rule: Rule, original: cst.CSTNode, updated: cst.CSTNode):
        rule.ctx.manual(rule.meta, original, self.step)
        return updated

    def describe(self) -> str:
        return f"TODO: {self.step}"


@dataclass(frozen=True)
class Rename:
    """The name becomes the dotted ``target``; the call keeps its arguments. The file imports
    ``module`` (the target's own module unless given: ``torch.optim.AdamW`` -> ``import torch.optim``),
    or with ``from_import`` the target's last part from its module (``from torch.utils.checkpoint
    import checkpoint``). ``note`` is the edit's message in the report, ``review`` a review marker."""

    target: str
    note: str = ""
    review: str = ""
    module: str = ""
    from_import: bool = False
    answers_calls: ClassVar[bool] = True
    answers_references: ClassVar[bool] = True

    def apply(self, rule: Rule, original: cst.CSTNode, updated: cst.CSTNode):
        new = rule.ctx.expr(self._imported_name(rule.ctx))
        if isinstance(original, cst.Call):
            new = updated.with_changes(func=new)
        return Edit(new, message=self.note, review=self.review)

    def _imported_name(self, ctx: RuleContext) -> str:
        home, _, name = self.target.rpartition(".")
        if self.from_import:
            return ctx.require_from_import(home, name)
        module = self.module or home
        rest = self.target.removeprefix(module)
        return ctx.require_import(module) + rest

    def describe(self) -> str:
        return f"becomes {self.target}" + (f" (review: {self.review})" if self.review else "")


@dataclass(frozen=True)
class Remove:
    """The call statement goes. ``note`` is the edit's message, ``review`` a review marker where the
    line was, ``fallback`` the next step when the call sits inside an expression and cannot go.
    Only calls are removed; a bare reference gets ``referenced`` as its next step when one is given."""

    note: str = ""
    fallback: str = ""
    review: str = ""
    referenced: str = ""
    answers_calls: ClassVar[bool] = True

    @property
    def answers_references(self) -> bool:
        return bool(self.referenced)

    def apply(self, rule: Rule, original: cst.CSTNode, updated: cst.CSTNode):
        if not isinstance(original, cst.Call):
            rule.ctx.manual(rule.meta, original, self.referenced)
            return updated
        return Edit(StatementReplacement([], fallback=self.fallback), message=self.note, review=self.review)

    def describe(self) -> str:
        return "the call is deleted" + (f"; a bare reference gets TODO: {self.referenced}" if self.referenced else "")


Action = Manual | Rename | Remove
# In a row's name: any module path, none included (``pkg.**.name``).
ANY_PATH = ".**."


@dataclass(frozen=True)
class Row:
    """One legacy name (or every name under ``pkg.mod.*``), the rule answering it and what it becomes.
    ``docs`` is the page to read when it is not among the rule's own."""

    name: str
    rule: str
    action: Action
    docs: str = ""

    @property
    def is_prefix(self) -> bool:
        return self.name.endswith(".*")

    @property
    def is_pattern(self) -> bool:
        return ANY_PATH in self.name

    def covers(self, qname: str) -> bool:
        """A prefix row ``pkg.mod.*`` covers ``pkg.mod`` itself and every name under it; a pattern row
        ``pkg.**.mod.name`` (or ``pkg.**.mod.*``) every name under ``pkg`` whose path holds ``mod.name``."""
        if self.is_pattern:
            package, _, path = self.name.removesuffix(".*").partition(ANY_PATH)
            if not qname.startswith(package + "."):
                return False
            parts, wanted = qname[len(package) + 1 :].split("."), path.split(".")
            return any(parts[at : at + len(wanted)] == wanted for at in range(len(parts)))
        if self.is_prefix:
            return qname == self.name[:-2] or qname.startswith(self.name[:-1])
        return qname == self.name


def rows_for_names(rule: str, names: Iterable[str], action: Action, docs: str = "") -> tuple[Row, ...]:
    """The same answer for every import path of one API."""
    return tuple(Row(name, rule, action, docs) for name in names)


def row_for(rows: dict[str, Row], qname: str) -> Row | None:
    """The row answering ``qname``: its exact row, else the longest prefix row covering it."""
    row = rows.get(qname)
    if row is not None:
        return row
    prefixes = [r for r in rows.values() if r.is_prefix and r.covers(qname)]
    return max(prefixes, key=lambda r: len(r.name), default=None)


def answer_row(rule: Rule, original: cst.CSTNode, updated: cst.CSTNode, qname: str):
    """The handler every row-derived entry of ``calls`` / ``references`` points to (as the rule's
    ``apply_row``). A rule that must decline some sites, or edit a call beyond its name, defines
    ``apply_row`` itself (or inherits it from its base class) and calls this where the row is enough."""
    row = row_for(rule.row_table, qname)
    return row.action.apply(rule, original, updated)


def install(cls: type[Rule]) -> None:
    """Keep the rows of ``cls``'s own rule id and derive its dispatch tables from them."""
    mine = tuple(row for row in cls.__dict__["rows"] if row.rule == cls.meta.id)
    if not mine:
        raise ValueError(f"{cls.meta.id}: `rows` holds no row of this rule")
    cls.rows = mine
    cls.row_table = {row.name: row for row in mine}
    if not hasattr(cls, "apply_row"):
        cls.apply_row = answer_row
    calls, references = {}, {}
    for row in mine:
        for name in _dispatch_names(cls, row):
            if row.action.answers_calls:
                calls[name] = "apply_row"
            if row.action.answers_references:
                references[name] = "apply_row"
    for table, derived in (("calls", calls), ("references", references)):
        own = getattr(cls, table)
        clash = sorted(set(own) & set(derived))
        if clash:
            raise ValueError(f"{cls.meta.id}: {clash[0]} has both a row and a {table} handler")
        setattr(cls, table, {**own, **derived})


def _dispatch_names(cls: type[Rule], row: Row) -> tuple[str, ...]:
    if not row.is_prefix and not row.is_pattern:
        return (row.name,)
    # The engine dispatches exact names. A rule that finds every use under its own ``prefixes``
    # (LegacyUseRule) reads its prefix and pattern rows itself; any other rule lists the exact
    # names a prefix row answers in ``row_names``.
    if any(row.name.removesuffix(".*") == p or row.name.startswith(p + ".") for p in getattr(cls, "prefixes", ())):
        return ()
    if row.is_pattern:
        raise ValueError(f"{cls.meta.id}: pattern row {row.name} needs a rule that finds the uses under its prefixes")
    names = tuple(name for name in getattr(cls, "row_names", ()) if row.covers(name))
    if not names:
        raise ValueError(f"{cls.meta.id}: prefix row {row.name} matches none of the rule's row_names")
    return names
