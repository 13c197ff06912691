"""What a Python rule may ask of the file it runs on (its ``self.ctx``), as a Protocol.

The engine's :class:`~neuron_migrate.migrate.context.FileContext` is the one implementation; the rule API
names only this Protocol, so it does not build on the engine, not even for its types (the layers go
the other way). ``tests/test_ruleapi_context.py`` checks that FileContext satisfies it and that every
member a rule uses is declared here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    import libcst as cst
    from libcst.metadata import MetadataWrapper

    from neuron_migrate.report.model import Span
    from neuron_migrate.ruleapi.facts import Fact
    from neuron_migrate.ruleapi.rule import RuleMeta
    from neuron_migrate.ruleapi.reporter import Reporter

T = TypeVar("T")


class ImportedNames(Protocol):
    """The file's name resolution, one node at a time."""

    def imported(self, node: cst.CSTNode) -> set[str]:
        """Qualified names of ``node`` whose root an import bound (LibCST's answers, imports only)."""

    def scope_of(self, node: cst.CSTNode):
        """The LibCST scope ``node`` is in."""


@runtime_checkable
class RuleContext(Protocol):
    """The per-file services of a Python rule: the file, its names, code building, and the report."""

    # ----- the file
    path: str
    # the notebook cell the code comes from (None for a Python file)
    cell: int | None
    module: cst.Module
    wrapper: MetadataWrapper
    # the module's code, as an unchanged file prints back
    text: str
    # --no-comments: findings go to the report, no marker is written
    no_comments: bool

    # ----- names and positions
    qualified: ImportedNames
    # id(call) -> the one-statement line the call is the whole value of
    statement_for_call: dict[int, cst.SimpleStatementLine]
    # the statements the engine is inside of, outermost first
    statement_stack: list[cst.CSTNode]

    def qualified_names(self, node: cst.CSTNode) -> set[str]:
        """Imported qualified names of ``node`` (local shadows and unknown names give nothing)."""

    def any_qualified_name(self, node: cst.CSTNode, names: set[str] | frozenset[str]) -> str | None:
        """The first of ``node``'s qualified names that is in ``names``."""

    def span(self, node: cst.CSTNode) -> Span:
        """Where ``node`` is in the file (of the original module)."""

    def code(self, node: cst.CSTNode) -> str:
        """The code of ``node``."""

    def fact(self, fact: Fact[T]) -> T:
        """The file's value of a declared Fact, computed on first use and shared by every rule."""

    # ----- building replacement code
    @staticmethod
    def expr(text: str) -> cst.BaseExpression:
        """``text`` parsed as an expression."""

    @staticmethod
    def statements(text: str) -> list[cst.BaseStatement]:
        """``text`` parsed as statements."""

    def require_import(self, module: str, alias: str | None = None) -> str:
        """Have the file import ``module`` (once); returns the name to use for it."""

    def require_from_import(self, module: str, name: str) -> str:
        """Have the file import ``name`` from ``module`` (once); returns the name to use for it."""

    def add_setup(self, meta: RuleMeta, node: cst.CSTNode, code: str, why: str, *, unless: str,
                  label: str = "") -> None:
        """A start-up statement (or helper) inserted once after the imports with a one-line why, unless
        the file's code already holds ``unless``."""

    # ----- the file's imports as the engine found them (read by rules that adapt to them)
    # module -> the name its import binds
    existing_imports: dict[str, str]
    # (module, name) -> the name its from-import binds
    existing_from_imports: dict[tuple[str, str], str]
    # the imports rules asked for so far in this file
    imports_needed: dict
    # names an import binds, and names the module binds at its top level
    import_bound: set[str]
    module_names: set[str]
    has_legacy_imports: bool

    # ----- dual-stack guards (``try: import torch_xla``, ``if is_torch_xla_available():``)
    legacy_prefixes: tuple[str, ...]
    guard_names: frozenset[str]
    guards_kept: bool
    keep_dual_stack: bool
    guard_fallbacks: frozenset[str]
    probed_names: set[str]
    neuron_copy_depth: int

    def is_shim_name(self, node: cst.CSTNode) -> bool:
        """Is ``node`` a name only a dual-stack guard imports?"""

    # ----- talking to the report
    reporter: Reporter

    def manual(self, meta: RuleMeta, node: cst.CSTNode, message: str, fix: str = "") -> None:
        """Leave ``node`` as it is, with a TODO marker of rule ``meta`` giving the next step."""

    def report(self, meta: RuleMeta, node: cst.CSTNode, message: str, fix: str = "") -> None:
        """A finding for the report only: nothing changes, no marker."""

    def answered_by_enclosing_call(self) -> None:
        """The node is answered by the call around it: no leftover marker of its own."""

    def is_suppressed(self, rule_id: str, node: cst.CSTNode) -> bool:
        """Does an ignore comment turn ``rule_id`` off at ``node``?"""
