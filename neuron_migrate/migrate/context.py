"""The per-file services a rule uses: name resolution, positions, imports, notes and markers.

Everything a rule wants to say goes through here, so that suppression comments, ``--no-comments``,
marker de-duplication and the report behave identically for every rule.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from typing import TypeVar

import libcst as cst
from libcst.metadata import GlobalScope, MetadataWrapper, QualifiedNameSource, ScopeProvider

from neuron_migrate import markers
from neuron_migrate.migrate.guards import is_shim
from neuron_migrate.migrate.positions import code_and_ranges
from neuron_migrate.report.model import INFO, MANUAL, REVIEW, SAFE, Finding, Span
from neuron_migrate.ruleapi import Edit, Fact, Facts, RuleMeta
from neuron_migrate.ruleapi.reporter import Reporter

_EMPTY = cst.Module(body=[])
T = TypeVar("T")

# Submodules their package imports when it is imported (``import torch`` makes ``torch.distributed`` usable):
# with the package imported, code may name them without an import of their own. Any other submodule
# (``torch.distributed.fsdp``, ``torch.distributed.optim``) gets one, or the dotted name would fail.
LOADED_WITH_PACKAGE = frozenset(
    {
        "os.path",
        "torch.amp",
        "torch.distributed",
        "torch.distributed.device_mesh",
        "torch.nn",
        "torch.nn.functional",
        "torch.optim",
        "torch.profiler",
        "torch.utils",
        "torch.utils._pytree",
        "torch.utils.checkpoint",
        "torch.utils.data",
        "torch.utils.data.distributed",
        "torch._dynamo",
    }
)


# How the TODO of an edit already made begins (see Edit.todo): it describes what was done.
EDIT_TODO_PREFIX = "deleted "


def site_todo_rule(comment: str) -> str | None:
    """The rule id of a TODO marker about code left as it was below it (not about an edit made)."""
    marker = markers.parse(comment.strip())
    if marker is None or not marker.todo or not marker.rule or marker.text.startswith(EDIT_TODO_PREFIX):
        return None
    return marker.rule


def root_name(node: cst.CSTNode) -> str:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else ""


def _import_statements(body, legacy_prefixes, guard_names, in_shim: str):
    """(import node, the dual-stack guard around it: "" none, "try" for ``try: import torch_xla``, "if"
    for ``if is_torch_xla_available():``) for every import statement, at any depth."""
    for stmt in body:
        if isinstance(stmt, (cst.Import, cst.ImportFrom)):
            yield stmt, in_shim
            continue
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)):
                    yield small, in_shim
            continue
        if not isinstance(stmt, cst.BaseCompoundStatement):
            continue
        kind = _shim_kind(stmt, legacy_prefixes, guard_names)
        shim = "if" if "if" in (in_shim, kind) else in_shim or kind
        for block in _blocks(stmt):
            # an indented block holds statements, a one-line suite small statements
            yield from _import_statements(block.body, legacy_prefixes, guard_names, shim)


def _shim_kind(stmt, legacy_prefixes, guard_names) -> str:
    if not is_shim(stmt, legacy_prefixes, guard_names):
        return ""
    return "try" if isinstance(stmt, cst.Try) else "if"


def _shim_names(body, legacy_prefixes, guard_names, flags: set[str], fallbacks: set[str], nones: set[str]) -> None:
    """Collect, for every ``try: import torch_xla`` block at any depth, the names its body sets to
    True (``HAVE_XLA = True``: a flag later code tests), the names its handlers assign (``xm =
    None``: a fallback, so the code tests the name itself before each use), and of those the ones
    set to None."""
    for stmt in body:
        if not isinstance(stmt, cst.BaseCompoundStatement):
            continue
        if _shim_kind(stmt, legacy_prefixes, guard_names) == "try":
            flags.update(_assigned(stmt.body, lambda value: code_of(value) == "True"))
            for handler in stmt.handlers:
                fallbacks.update(_assigned(handler.body, lambda value: True))
                nones.update(_assigned(handler.body, lambda value: code_of(value) == "None"))
        for block in _blocks(stmt):
            _shim_names(block.body, legacy_prefixes, guard_names, flags, fallbacks, nones)


def _assigned(block, keep):
    """The names the simple statements of ``block`` assign a value ``keep`` accepts (compound
    statements in the block are not looked into)."""
    for line in getattr(block, "body", ()):
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for small in line.body:
            if isinstance(small, cst.Assign) and keep(small.value):
                yield from (t.target.value for t in small.targets if isinstance(t.target, cst.Name))


def _blocks(stmt):
    """The statement blocks directly inside a compound statement (an ``elif`` counts as inside)."""
    if isinstance(stmt, cst.Match):
        for case in stmt.cases:
            yield case.body
        return
    yield stmt.body
    for handler in getattr(stmt, "handlers", ()):
        yield handler.body
    orelse = getattr(stmt, "orelse", None)
    if isinstance(orelse, cst.If):
        yield from _blocks(orelse)
    elif orelse is not None:
        yield orelse.body
    final = getattr(stmt, "finalbody", None)
    if final is not None:
        yield final.body


def _bindings(node: cst.Import | cst.ImportFrom):
    """(module, bound name) for each name an import binds; ``*`` for a star import."""
    if isinstance(node, cst.Import):
        for alias in node.names:
            dotted = code_of(alias.name)
            yield dotted, alias.asname.name.value if alias.asname else dotted.split(".")[0]
        return
    if node.relative or node.module is None:
        return
    module = code_of(node.module)
    if isinstance(node.names, cst.ImportStar):
        yield module, "*"
        return
    for alias in node.names:
        yield f"{module}.{code_of(alias.name)}", alias.asname.name.value if alias.asname else code_of(alias.name)


def is_import_line(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)


def code_of(node: cst.CSTNode) -> str:
    return _EMPTY.code_for_node(node)


@dataclass
class PendingNote:
    """What the rule currently running said about the change it is making."""

    message: str = ""
    review: str = ""
    safety: str = ""
    todo: str = ""
    answered: bool = False


@dataclass
class ImportRequest:
    module: str
    name: str | None = None
    alias: str | None = None

    def statement(self) -> str:
        if self.name:
            suffix = f" as {self.alias}" if self.alias and self.alias != self.name else ""
            return f"from {self.module} import {self.name}{suffix}"
        suffix = f" as {self.alias}" if self.alias and self.alias != self.module else ""
        return f"import {self.module}{suffix}"


class QualifiedNames:
    """What ``QualifiedNameProvider`` gives, asked of the scope analysis one node at a time.

    The provider is a whole-module pass that wraps ``scope.get_qualified_names_for(node)`` for every
    node; the engine asks for a few nodes only (those named through an import of a module a rule
    handles), so the same answers come for a fraction of the cost.
    """

    def __init__(self, scopes) -> None:
        self._scopes = scopes
        self._known: dict[cst.CSTNode, object] = {}

    def get(self, node: cst.CSTNode, default=()):
        known = self._known.get(node)
        if known is None:
            scope = self._scopes.get(node)
            known = self._known[node] = scope.get_qualified_names_for(node) if scope is not None else set()
        return known or default

    def scope_of(self, node: cst.CSTNode):
        return self._scopes.get(node)

    def is_bound(self, node: cst.Name) -> bool:
        """Does any scope the name is read in bind it (an assignment, a parameter, an import)?"""
        scope = self._scopes.get(node)
        return scope is None or node.value in scope

    def imported(self, node: cst.CSTNode) -> set[str]:
        """The qualified names ``node`` has through an import, for any module (no check that a rule
        handles it: see ``FileContext.qualified_names`` for that)."""
        return {q.name for q in self.get(node) if q.source is QualifiedNameSource.IMPORT}


@dataclass
class FileContext:
    path: str
    wrapper: MetadataWrapper
    roots: frozenset[str] = frozenset()
    legacy_prefixes: tuple[str, ...] = ()
    no_comments: bool = False
    cell: int | None = None
    # dual-stack guards are kept (--keep-dual-stack, or their rule not selected): code under them is not migrated
    # in place, it stays for the legacy stack (and gains a neuron branch with --keep-dual-stack)
    guards_kept: bool = False
    # --keep-dual-stack as the user asked it: rules that pair a legacy check with a neuron one read this
    keep_dual_stack: bool = False
    # the short names of the availability checks that make an ``if`` a dual-stack guard (is_torch_xla_available)
    guard_names: frozenset[str] = frozenset()
    findings: list[Finding] = field(default_factory=list)
    imports_needed: dict[str, ImportRequest] = field(default_factory=dict)
    # start-up statement -> the comment that says why (see add_setup)
    setup: dict[str, str] = field(default_factory=dict)
    existing_imports: dict[str, str] = field(default_factory=dict)
    existing_from_imports: dict[tuple[str, str], str] = field(default_factory=dict)
    module_names: set[str] = field(default_factory=set)
    _facts: Facts = field(default_factory=Facts)
    _note: PendingNote = field(default_factory=PendingNote)
    # statement node id -> marker comment lines to attach when the engine leaves that statement
    markers: dict[int, list[str]] = field(default_factory=dict)
    statement_stack: list[cst.CSTNode] = field(default_factory=list)
    # line -> the short tag that ends it: a use left below the first line of its statement
    line_tags: dict[int, str] = field(default_factory=dict)
    import_bound: set[str] = field(default_factory=set)
    shim_bound: set[str] = field(default_factory=set)
    shim_flags: frozenset[str] = frozenset()
    # names a try guard's handler sets to None (``except ImportError: xm = None``): code tests them before use
    guard_fallbacks: frozenset[str] = frozenset()
    # the fallback names whose presence tests now test the TorchNeuron probe (``torch_neuronx is not None``)
    probed_names: set[str] = field(default_factory=set)
    # > 0 while the engine visits the neuron copy of a legacy branch (--keep-dual-stack): names that only a
    # guard imports are resolved there, since that copy is the code being migrated
    neuron_copy_depth: int = 0
    has_legacy_imports: bool = False
    # id(call) -> the one-statement line whose whole value the call is (filled by the engine)
    statement_for_call: dict[int, cst.SimpleStatementLine] = field(default_factory=dict)
    # import request key or setting -> the lazy home of each site that needs it (None: module level)
    import_sites: dict[str, list[cst.CSTNode | None]] = field(default_factory=dict)
    # id(stand-in line the engine made for a statement sharing its line) -> that statement
    stand_ins: dict[int, cst.BaseSmallStatement] = field(default_factory=dict)
    # name -> the legacy module an import anywhere in the file binds it to
    legacy_aliases: dict[str, str] = field(default_factory=dict)
    # id(top-level statement) -> its index; name -> the index of the first module-level import binding it
    _top_index: dict[int, int] = field(default_factory=dict)
    _import_line: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.module = self.wrapper.module
        # The module's code and its nodes' positions, generated once: rules search the code, and it
        # is what an unchanged file prints back as.
        self.text, self._ranges = code_and_ranges(self.module)
        self.reporter = Reporter(self.path, self.text, cell=self.cell)
        self.reporter.findings = self.findings
        self.qualified = QualifiedNames(self.wrapper.resolve(ScopeProvider))
        self._scan_imports()
        self._scan_bindings()

    def fact(self, fact: Fact[T]) -> T:
        """The file's value of a declared :class:`~neuron_migrate.ruleapi.Fact`, computed on first use."""
        return self._facts.get(fact, self)

    # ----- name resolution -------------------------------------------------------------------
    def qualified_names(self, node: cst.CSTNode) -> set[str]:
        """Imported qualified names of ``node`` (local shadows and unknown names give nothing)."""
        name = root_name(node)
        if name not in self.import_bound and not (self.neuron_copy_depth and name in self.shim_bound):
            return set()
        found = self.qualified.imported(node)
        if not found and name in self.legacy_aliases:
            return self._legacy_import_elsewhere(node, name)
        return found

    def _scan_bindings(self) -> None:
        """Sort the names bound by imports of interesting modules before any rule runs: only those
        get resolved. With --keep-dual-stack, a legacy name bound only inside an ``if
        is_torch_xla_available():`` guard is resolved only in the neuron copy the engine makes of a
        legacy branch: elsewhere, code using it runs only on the legacy stack and is kept. By default
        every dual-stack branch is migrated, so every name is resolved.

        Only statements are walked, never expressions, so this costs little next to the parse."""
        flags: set[str] = set()
        fallbacks: set[str] = set()
        nones: set[str] = set()
        _shim_names(self.module.body, self.legacy_prefixes, self.guard_names, flags, fallbacks, nones)
        if not self.guards_kept:
            flags, fallbacks = set(), set()
        self.shim_flags = frozenset(flags)
        self.guard_fallbacks = frozenset(nones)
        for node, in_shim in _import_statements(self.module.body, self.legacy_prefixes, self.guard_names, ""):
            in_shim = in_shim if self.guards_kept else ""
            for module, bound in _bindings(node):
                if module.split(".")[0] not in self.roots:
                    continue
                is_legacy = any(module == p or module.startswith(p + ".") for p in self.legacy_prefixes)
                if is_legacy and bound != "*":
                    self.legacy_aliases.setdefault(bound, module)
                if bound == "*":
                    continue
                # A name a ``try:`` guard imports is resolved, unless the handler gives it a
                # fallback: its uses outside the try and outside ``if HAVE_XLA:`` (see shim_flags)
                # cannot run without torch_xla; the engine keeps the guarded ones.
                if is_legacy and (in_shim == "if" or (in_shim == "try" and bound in fallbacks)):
                    self.shim_bound.add(bound)
                else:
                    self.import_bound.add(bound)
                    self.has_legacy_imports = self.has_legacy_imports or is_legacy

    def _legacy_import_elsewhere(self, node: cst.CSTNode, name: str) -> set[str]:
        """``xm.mark_step()`` in a function where nothing binds ``xm``, the file importing it in another one only
        (so the line failed before the migration too): read as the module that import names."""
        parts = []
        while isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        if not isinstance(node, cst.Name) or self.qualified.is_bound(node):
            return set()
        return {".".join([self.legacy_aliases[name], *reversed(parts)])}

    def is_shim_name(self, node: cst.CSTNode) -> bool:
        """Is ``node`` named through an import that only a dual-stack guard makes (--keep-dual-stack),
        outside the neuron copy of a legacy branch?"""
        name = root_name(node)
        return name in self.shim_bound and name not in self.import_bound and not self.neuron_copy_depth

    def any_qualified_name(self, node: cst.CSTNode, names: set[str] | frozenset[str]) -> str | None:
        for name in self.qualified_names(node):
            if name in names:
                return name
        return None

    def span(self, node: cst.CSTNode) -> Span:
        node = self.stand_ins.get(id(node), node)
        found = self._ranges.get(id(node))
        if found is None:
            return Span(1, 1, 1, 1)
        line, column, end_line, end_column = found
        return Span(line, column + 1, end_line, end_column + 1)

    def first_line(self, statement: cst.CSTNode) -> int:
        """The line a statement's text starts on: its first decorator's for a decorated def or class."""
        decorators = getattr(statement, "decorators", ())
        return self.span(decorators[0] if decorators else statement).line

    def code(self, node: cst.CSTNode) -> str:
        return code_of(node)

    # ----- building replacement code ---------------------------------------------------------
    def require_import(self, module: str, alias: str | None = None) -> str:
        """Make ``module`` importable in this file and return the expression that names it.

        ``require_import("torch.distributed", alias="dist")`` reuses ``import torch.distributed as
        td`` if the file has it, else schedules ``import torch.distributed as dist``, unless ``dist``
        already means something else here, in which case the full dotted name is used.
        """
        if module in self.existing_imports and self._bound_here(self.existing_imports[module]):
            return self.existing_imports[module]
        if alias is None and self._bound_in_function(module.split(".")[0]):
            # ``def count(model, torch):`` is handed the module: code there reads it as the function does
            return module
        parent, _, child = module.rpartition(".")
        if parent and (parent, child) in self.existing_from_imports and self._bound_here(self.existing_from_imports[(parent, child)]):
            return self.existing_from_imports[(parent, child)]
        wanted = alias or module
        self._note_import_site(module, module)
        request = self.imports_needed.get(module)
        if request is not None:
            return request.alias or module
        if alias and alias in self.module_names:
            alias = None
            wanted = module
        if alias is None and module in LOADED_WITH_PACKAGE:
            root = module.split(".")[0]
            if root in self.existing_imports.values() and self.existing_imports.get(root) == root and self._bound_here(root):
                return module
        self.imports_needed[module] = ImportRequest(module, alias=alias)
        return wanted

    def _bound_in_function(self, name: str) -> bool:
        """Does the function being migrated bind ``name`` itself (a parameter, a local import)?"""
        if not self.statement_stack:
            return False
        scope = self.qualified.scope_of(self.statement_stack[-1])
        if scope is None or name not in scope:
            return False
        return any(not isinstance(a.scope, GlobalScope) for a in scope[name])

    def _bound_here(self, name: str) -> bool:
        """Is the module-level import binding ``name`` run before the statement being migrated? Always, inside
        a function (it runs later); at module level only when the import is above (a notebook's later cell
        imports too late for an earlier one)."""
        line = self._import_line.get(name)
        if line is None or not self.statement_stack:
            return True
        if any(isinstance(s, (cst.FunctionDef, cst.Lambda)) for s in self.statement_stack):
            return True
        return self._top_index.get(id(self.statement_stack[0]), line) >= line

    def require_from_import(self, module: str, name: str) -> str:
        """Make ``name`` from ``module`` usable here and return the expression that names it.

        Reuses ``from module import name [as x]`` if the file has it, else schedules ``from module
        import name`` (merged into the file's own ``from module import ...`` line when it has one).
        When ``name`` already means something else in this file (a local class, or the legacy
        import being replaced binds the same name) the dotted ``module.name`` is used instead.
        """
        bound = self.existing_from_imports.get((module, name))
        if bound is not None:
            return bound
        key = f"from {module} import {name}"
        self._note_import_site(key, module)
        if key in self.imports_needed:
            return name
        if name in self.module_names or name in self.import_bound or name in self.shim_bound:
            return f"{self.require_import(module)}.{name}"
        self.imports_needed[key] = ImportRequest(module, name=name)
        return name

    def add_setup(
        self, meta: RuleMeta, node: cst.CSTNode, code: str, why: str, *, unless: str, label: str = ""
    ) -> None:
        """Run ``code`` once at start-up: it goes after the file's imports, with ``why`` as a comment.

        Nothing is added when ``unless`` already appears in the file (the user set it some other
        way). The edit is reported against ``node``, the call that made the setting necessary;
        ``label`` names a long statement (a helper function) in that report instead of its code.
        """
        if unless in self.text or code in self.setup:
            return
        self._note_import_site(code, "")
        self.setup[code] = why
        # A helper definition is named by its label or its first line; the report's "after" has all of it.
        shown = label or f"`{code.splitlines()[0].rstrip(':')}`"
        message = f"added {shown} after the imports" + (f": {why}" if why else "")
        self._report(meta, node, message, SAFE, applied=True, after=code)

    # ----- where added imports go ------------------------------------------------------------
    def _note_import_site(self, key: str, module: str) -> None:
        """Remember where an import (or a start-up setting, ``module`` empty) is needed: a module that
        imports a package only inside a function keeps it there (a lazy import, often to keep the
        module cheap to import), so what the migration adds for that code goes next to it. A
        setting made for lazily imported code is made there too, not when the module is imported."""
        root = module.split(".")[0]
        home = None if self._loaded_at_import(root) else self._lazy_home(root)
        self.import_sites.setdefault(key, []).append(home)

    def _loaded_at_import(self, root: str) -> bool:
        """Is ``root`` loaded when this module is imported: standard library (cheap), or imported at
        module level, by itself or through a legacy package (which loads torch and the rest)?"""
        if root in sys.stdlib_module_names:
            return True
        root = root or "\0"  # a setting: only a legacy import at module level counts
        modules = [*self.existing_imports, *(m for m, _ in self.existing_from_imports)]
        return any(m.split(".")[0] == root or self._is_legacy_module(m) for m in modules)

    def _lazy_home(self, root: str) -> cst.CSTNode | None:
        """The innermost enclosing compound statement whose block itself imports ``root`` or a
        legacy package: the place this code imports its heavy dependencies. A dual-stack guard at module
        level (``if is_torch_xla_available(): import torch_xla``) is none: it runs at import time and imports
        what may be missing, not what is costly to import; inside a function, a guard is such a place too."""
        in_function = False
        homes = []
        for statement in self.statement_stack:
            if in_function or not is_shim(statement, self.legacy_prefixes, self.guard_names):
                homes.append(statement)
            in_function = in_function or isinstance(statement, cst.FunctionDef)
        for statement in reversed(homes):
            block = getattr(statement, "body", None)
            if isinstance(block, cst.IndentedBlock) and any(self._imports(s, root) for s in block.body):
                return statement
        return None

    def _imports(self, stmt: cst.CSTNode, root: str) -> bool:
        if not is_import_line(stmt):
            return False
        modules = [m for small in stmt.body for m, _ in _bindings(small)]
        return any(m.split(".")[0] == root or self._is_legacy_module(m) for m in modules)

    def _is_legacy_module(self, module: str) -> bool:
        return any(module == p or module.startswith(p + ".") for p in self.legacy_prefixes)

    def lazy_imports_for(self, home: cst.CSTNode) -> list[str]:
        """The requested imports, then start-up settings, that code inside ``home`` needs and that
        go into its block (every use is inside some such block), in the order they are added."""
        keys = [*self.imports_needed, *self.setup]
        return [key for key in keys if home in self.import_sites.get(key, ()) and self.is_lazy(key)]

    def is_lazy(self, key: str) -> bool:
        sites = self.import_sites.get(key)
        return bool(sites) and None not in sites

    @staticmethod
    def expr(text: str) -> cst.BaseExpression:
        return cst.parse_expression(text)

    @staticmethod
    def statements(text: str) -> list[cst.BaseStatement]:
        return list(cst.parse_module(text).body)

    # ----- talking to the report -------------------------------------------------------------
    def manual(self, meta: RuleMeta, node: cst.CSTNode, message: str, fix: str = "") -> None:
        """Leave ``node`` as it is and put ``meta``'s TODO marker with the concrete next step on its line."""
        suppressed = self.is_suppressed(meta.id, node)
        self._report(meta, node, message, MANUAL, applied=False, fix=fix, marker=message, suppressed=suppressed)
        if not suppressed:
            self._tag_line(node, meta.id)

    def record_manual(self, meta: RuleMeta, node: cst.CSTNode, message: str, fix: str = "") -> None:
        """A site left for a human whose marker the engine places itself (after the pass): the finding only."""
        self._report(meta, node, message, MANUAL, applied=False, fix=fix)

    @property
    def answered_elsewhere(self) -> bool:
        return self._note.answered

    def answered_by_enclosing_call(self) -> None:
        """The node is left as it is because the call around it answers for it (migrated with the
        call, or in the call's own TODO): no leftover marker of its own."""
        self._note.answered = True

    def report(self, meta: RuleMeta, node: cst.CSTNode, message: str, fix: str = "") -> None:
        """A finding of ``meta`` for the report only: nothing is changed and no marker is written."""
        self._report(meta, node, message, MANUAL, applied=False, fix=fix, severity=INFO)

    # ----- engine side -----------------------------------------------------------------------
    def take(self, edit: Edit):
        """What a handler's :class:`~neuron_migrate.ruleapi.Edit` says of its change, noted for
        ``finish_edit``; returns the replacement."""
        note = self._note
        note.message = edit.message or note.message
        if edit.review:
            note.review, note.safety = edit.review, REVIEW
        elif edit.safe:
            note.safety = SAFE
        if edit.todo:
            note.todo = edit.todo if edit.todo.startswith(EDIT_TODO_PREFIX) else EDIT_TODO_PREFIX + edit.todo
        return edit.replacement

    def record_edit(self, meta: RuleMeta, node: cst.CSTNode, edit: Edit, after: str = "") -> None:
        """Report an edit the engine made itself on a rule's behalf (an import nothing uses any more)."""
        self.begin()
        try:
            self.take(edit)
            self.finish_edit(meta, node, after)
        finally:
            self.end()

    def begin(self) -> None:
        """A handler starts: nothing said of its edit yet. (Every report call names its rule; the
        context keeps no current rule.)"""
        self._note = PendingNote()

    def finish_edit(self, meta: RuleMeta, original: cst.CSTNode, after: str) -> None:
        note = self._note
        if note.todo:
            self._report(meta, original, note.todo, MANUAL, applied=True, after=after, fix=note.todo, marker=note.todo)
            return
        safety = note.safety or meta.safety
        if safety == MANUAL:
            safety = REVIEW
        message = note.message or meta.title
        review = note.review or meta.summary or meta.title
        # For a reviewed edit the "fix" is what the reviewer has to check; renderers show it.
        fix = review if safety == REVIEW else ""
        marker = review if safety == REVIEW else ""
        self._report(meta, original, message, safety, applied=True, after=after, fix=fix, marker=marker)

    def record_dropped_marker(self, meta: RuleMeta, node: cst.CSTNode, comment: str) -> None:
        """A marker of an earlier run was removed above ``node``: the code it was about is gone."""
        message = "marker of an earlier run removed: the code it was about is gone or now reads differently"
        self._report(meta, node, message, SAFE, applied=True)
        self.findings[-1] = replace(self.findings[-1], before=comment.strip(), fingerprint="").finalize()

    def end(self) -> None:
        self._note = PendingNote()

    def is_suppressed(self, rule_id: str, node: cst.CSTNode) -> bool:
        if not self.reporter.has_suppressions:
            return False
        span = self.span(node)
        lines = set(range(span.line, span.end_line + 1))
        if self.statement_stack:
            stmt = self.statement_stack[-1]
            stmt_span = self.span(stmt)
            lines.add(stmt_span.line)
            if isinstance(stmt, cst.SimpleStatementLine):
                lines.add(stmt_span.end_line)
        return self.reporter.suppresses(rule_id, lines)

    def record_suppressed(self, meta: RuleMeta, node: cst.CSTNode) -> None:
        self.reporter.skipped(meta, self.span(node), self.code(node).strip())

    def _report(self, meta, node, message, safety, *, applied, after="", fix="", marker="", **extra) -> None:
        """The finding of ``meta`` at ``node``, and the marker it asks for above the statement being visited."""
        text = self.reporter.report(
            meta, self.span(node), message, safety, applied=applied, before=self.code(node).strip(),
            after=after.strip(), fix=fix, marker=marker, **extra,
        )
        if text:
            self._mark("# " + text)

    def _mark(self, comment: str) -> None:
        if self.no_comments or not self.statement_stack:
            return
        key = id(self.statement_stack[-1])
        lines = self.markers.setdefault(key, [])
        if comment not in lines:
            lines.append(comment)

    def _tag_line(self, node: cst.CSTNode, rule_id: str) -> None:
        """The TODO goes above the statement; a use further down a long statement also gets a short
        tag at the end of its own line, so a reader finds what the TODO is about."""
        if self.no_comments or not self.statement_stack:
            return
        line = self.span(node).line
        if line <= self.first_line(self.statement_stack[-1]):
            return
        tagged = markers.parse(self.line_tags.get(line, ""))
        ids = list(tagged.rules) if tagged else []
        if rule_id not in ids:
            self.line_tags[line] = markers.tag([*ids, rule_id])

    # ----- module facts ------------------------------------------------------------------------
    def _scan_imports(self) -> None:
        for index, stmt in enumerate(self.module.body):
            self._top_index[id(stmt)] = index
            if not isinstance(stmt, cst.SimpleStatementLine):
                self._note_defined_name(stmt)
                continue
            for small in stmt.body:
                if isinstance(small, cst.Import):
                    for alias in small.names:
                        dotted = code_of(alias.name)
                        bound = alias.asname.name.value if alias.asname else dotted.split(".")[0]
                        self._import_line.setdefault(bound, index)
                        if alias.asname:
                            self.existing_imports[dotted] = bound
                        else:
                            self.existing_imports.setdefault(dotted, dotted)
                            root = dotted.split(".")[0]
                            self.existing_imports.setdefault(root, root)
                        self.module_names.add(bound)
                elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                    if small.relative or small.module is None:
                        continue
                    module = code_of(small.module)
                    for alias in small.names:
                        name = code_of(alias.name)
                        bound = alias.asname.name.value if alias.asname else name
                        self._import_line.setdefault(bound, index)
                        self.existing_from_imports[(module, name)] = bound
                        self.module_names.add(bound)
                elif isinstance(small, (cst.Assign, cst.AnnAssign)):
                    targets = small.targets if isinstance(small, cst.Assign) else [small]
                    for target in targets:
                        if isinstance(target.target, cst.Name):
                            self.module_names.add(target.target.value)

    def _note_defined_name(self, stmt: cst.CSTNode) -> None:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            self.module_names.add(stmt.name.value)
