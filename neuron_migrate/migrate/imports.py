"""Import edits applied once per file after the rules ran: add what rules asked for, drop legacy
imports whose names the rewritten code no longer uses.

Only imports of legacy modules are ever removed: the tool does not tidy the user's other imports.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper

from neuron_migrate.migrate.context import code_of
from neuron_migrate.migrate.guards import is_shim, only_tests
from neuron_migrate.migrate.walk import walk


def _is_legacy(dotted: str, legacy_prefixes: tuple[str, ...]) -> bool:
    return any(dotted == p or dotted.startswith(p + ".") for p in legacy_prefixes)


class _UsedNames(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()
        self.strings: set[str] = set()
        # Names something other than a module-level import binds: only these can shadow one.
        self.rebound: set[str] = set()
        self.quoting = 0  # > 0 inside an annotation or an ``__all__`` assignment: strings there name names

    def visit_Import(self, node) -> bool:
        return False

    def visit_ImportFrom(self, node) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        # ``torch.optim.SGD`` uses the name ``torch``; its attribute ``SGD`` must not keep an
        # imported ``SGD`` alive.
        walk(node.value, self)
        return False

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        # Names listed in __all__ or used in string annotations still count as uses; a name in any other
        # string (``print("torch_xla ...")``) does not keep its import.
        if not self.quoting:
            return
        text = node.evaluated_value if isinstance(node.evaluated_value, str) else ""
        if text.isidentifier():
            self.strings.add(text)

    def visit_Annotation(self, node: cst.Annotation) -> None:
        self.quoting += 1

    def leave_Annotation(self, original_node: cst.Annotation) -> None:
        self.quoting -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        if _sets_all(node.targets):
            self.quoting += 1

    def leave_Assign(self, original_node: cst.Assign) -> None:
        if _sets_all(original_node.targets):
            self.quoting -= 1

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._rebinds(node.target)
        if _sets_all([node]):
            self.quoting += 1

    def leave_AugAssign(self, original_node: cst.AugAssign) -> None:
        if _sets_all([original_node]):
            self.quoting -= 1

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._rebinds(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._rebinds(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._rebinds(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._rebinds(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._rebinds(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._rebinds(node.name)

    def visit_Param(self, node: cst.Param) -> None:
        self.rebound.add(node.name.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.rebound.add(node.name.value)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.rebound.add(node.name.value)

    def _rebinds(self, target: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            self.rebound.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._rebinds(element.value)
        elif isinstance(target, cst.StarredElement):
            self._rebinds(target.value)


def _sets_all(targets) -> bool:
    return any(isinstance(t.target, cst.Name) and t.target.value == "__all__" for t in targets)


class _NameUses:
    """Whether a name bound by an import is still read.

    The name scan is cheap but blind to scopes. When it says "used" of a name that the file also
    binds some other way, scope analysis confirms that some read resolves to an import and not to
    a local variable sharing its name (a function's own ``xla_device = "cpu"``); it runs at most
    once per file, and only in that case.
    """

    def __init__(self, module: cst.Module) -> None:
        finder = _UsedNames()
        walk(module, finder)
        self.module = module
        self.names = finder.names
        self.strings = finder.strings
        self.rebound = finder.rebound
        self._unread: set[str] | None = None

    def __contains__(self, name: str) -> bool:
        if name in self.strings:
            return True
        if name not in self.names:
            return False
        if name not in self.rebound:
            return True
        if self._unread is None:
            self._unread = _unread_import_names(self.module)
        return name not in self._unread


def _unread_import_names(module: cst.Module) -> set[str]:
    """Names bound by imports that no read resolves to, by LibCST's own unused-import analysis
    (scopes, string annotations, ``__all__``). It costs about 20 times the name scan (a scope and
    qualified-name pass over the rewritten module, measured on the real-code corpus), so it only
    settles the names the scan cannot."""
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import GatherUnusedImportsVisitor

    wrapper = MetadataWrapper(module)
    wrapper.resolve_many(GatherUnusedImportsVisitor.get_inherited_dependencies())
    gatherer = GatherUnusedImportsVisitor(CodemodContext(wrapper=wrapper))
    wrapper.visit(gatherer)
    unused = {id(alias) for alias, _ in gatherer.unused_imports}
    aliases = _ImportAliases()
    walk(wrapper.module, aliases)
    # The remover goes by name: a name some import binds and a read reaches stays.
    read = {_bound_name(alias) for alias in aliases.found if id(alias) not in unused}
    return {_bound_name(alias) for alias in aliases.found if id(alias) in unused} - read


class _ImportAliases(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: list[cst.ImportAlias] = []

    def visit_ImportAlias(self, node: cst.ImportAlias) -> bool:
        self.found.append(node)
        return False


def _bound_name(alias: cst.ImportAlias) -> str:
    # "import a.b.c" binds "a"; "import a.b as c" and "from a import b" bind what they name.
    return alias.evaluated_alias or alias.evaluated_name.split(".")[0]


# The nodes an import statement can sit under: the remover descends into these only, since
# rebuilding the expressions of a whole module would cost as much as parsing it.
_IMPORT_HOLDERS = (
    cst.Module,
    cst.BaseCompoundStatement,
    cst.BaseSuite,
    cst.SimpleStatementLine,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.Else,
    cst.Finally,
    cst.MatchCase,
)


@dataclass
class _TryGuard:
    """A ``try:`` whose body imports a legacy module, while the remover is inside it."""

    ordinal: int  # which try guard of the file, in document order
    imports: set[int]  # id of every import statement (small statement) of its body, at any depth
    lines: set[int]  # id of every statement directly in its body
    removed: bool = False  # a legacy import of the body was removed
    kept: bool = False  # a legacy import of the body is still read
    removed_names: set[str] = field(default_factory=set)  # the names those removed imports bound
    probe: cst.SimpleStatementLine | None = None  # put where the first removed import line was


@dataclass(frozen=True)
class GuardOutcome:
    """What became of a ``try:`` guard's legacy imports: ``probe``, they went and the TorchNeuron probe
    took their place (the except branch still runs where TorchNeuron is not installed); ``legacy``, one
    is still read (code without an automatic migration), so on TorchNeuron the except branch runs;
    ``gone``, the try did nothing but import them, so it went with them.
    ``probed``: the fallback names of its handlers (``met = None``) whose tests now test the probe."""

    ordinal: int
    kind: str
    probed: tuple[str, ...] = ()


class _LegacyImportRemover(cst.CSTTransformer):
    def __init__(
        self,
        used: _NameUses,
        legacy_prefixes: tuple[str, ...],
        is_shim,
        probe: str = "",
        legacy_marker: str = "",
        probed: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__()
        self.used = used
        self.legacy_prefixes = legacy_prefixes
        self.is_shim = is_shim
        # the import that tells whether TorchNeuron is installed; empty: dual-stack guards are kept as they are
        self.probe = probe
        # the marker above a guard that still imports a legacy module (empty: no markers)
        self.legacy_marker = legacy_marker
        # fallback names (``met = None``) whose presence tests now test the name the probe binds
        self.probed = probed
        self.probe_name = probe.split()[1].split(".")[0] if probe else ""
        self.removed: list[str] = []
        self.guards: list[_TryGuard] = []
        self.outcomes: list[GuardOutcome] = []
        self.ordinal = 0

    def on_visit(self, node: cst.CSTNode) -> bool:
        # An import's own parts are read in leave_Import/leave_ImportFrom, which still run.
        return isinstance(node, _IMPORT_HOLDERS) and super().on_visit(node)

    def visit_Try(self, node: cst.Try) -> bool:
        if not self.is_shim(node):
            return True
        if not self.probe:
            return False
        self.guards.append(_TryGuard(self.ordinal, _import_ids(node.body), {id(s) for s in node.body.body}))
        self.ordinal += 1
        return True

    def leave_Try(self, original: cst.Try, updated: cst.Try):
        if not self.guards or not self.is_shim(original):
            return updated
        guard = self.guards.pop()
        body = list(updated.body.body)
        handlers, probed = self._probed_handlers(updated.handlers)
        handlers = [self._without_dead_fallbacks(h, guard) for h in handlers]
        probed_names = tuple(sorted(probed))
        has_probe = _imports_probe(body, self.probe, guard.probe)
        if (guard.kept and not probed) or (guard.removed and has_probe):
            # a legacy import still fails where torch_xla is missing, or the try has the probe already
            body = [s for s in body if s is not guard.probe]
        elif (guard.removed or probed) and guard.probe is None and not has_probe:
            body.insert(0, cst.parse_statement(self.probe + "\n"))
        if guard.removed and not guard.kept and _probe_alone(body, handlers, updated):
            # ``try: import torch_xla.distributed.xla_backend except ImportError: pass`` did nothing else
            self.outcomes.append(GuardOutcome(guard.ordinal, "gone"))
            return cst.RemoveFromParent()
        if guard.kept or guard.removed:
            self.outcomes.append(GuardOutcome(guard.ordinal, "legacy" if guard.kept else "probe", probed_names))
        block = updated.body.with_changes(body=body)
        return self._marked(updated.with_changes(body=block, handlers=handlers), guard.kept)

    def _without_dead_fallbacks(self, handler, guard: _TryGuard):
        """``except ImportError: xm = None`` once the import of ``xm`` went and nothing reads ``xm``."""
        lines = getattr(handler.body, "body", None)
        if not lines or not guard.removed_names:
            return handler
        kept = [
            line for line in lines if not (_none_assigned(line) in guard.removed_names and _none_assigned(line) not in self.used)
        ]
        if len(kept) == len(lines):
            return handler
        return handler.with_changes(body=handler.body.with_changes(body=kept))

    def _probed_handlers(self, handlers) -> tuple[list, set[str]]:
        """The handlers with ``<probe name> = None`` where they set a name to None whose presence tests now
        test the probe (``met = None`` becomes it once ``met`` is read no more), and those names."""
        probed: set[str] = set()
        if not self.probed:
            return list(handlers), probed
        out = []
        for handler in handlers:
            lines, seen = [], False
            for line in getattr(handler.body, "body", ()):
                name = _none_assigned(line)
                if name is None or name not in self.probed:
                    lines.append(line)
                    continue
                probed.add(name)
                if name in self.used:
                    lines.append(line)
                if not seen:
                    lines.append(cst.parse_statement(f"{self.probe_name} = None\n"))
                    seen = True
            out.append(handler.with_changes(body=handler.body.with_changes(body=lines)) if seen else handler)
        return out, probed

    def _marked(self, node: cst.Try, marked: bool) -> cst.Try:
        """``node`` with the legacy-import marker above it when ``marked``, without it otherwise."""
        if not self.legacy_marker:
            return node
        lines = [line for line in node.leading_lines if _comment(line) != self.legacy_marker]
        if marked:
            lines.append(cst.EmptyLine(comment=cst.Comment(self.legacy_marker)))
        if len(lines) == len(node.leading_lines) and not marked:
            return node
        return node.with_changes(leading_lines=lines)

    def visit_If(self, node: cst.If) -> bool:
        return bool(self.probe) or not self.is_shim(node)

    def leave_If(self, original: cst.If, updated: cst.If):
        # An ``if`` that held only imports that went (``if is_torch_xla_available(): import torch_xla``)
        # goes too, when its test does nothing but test.
        emptied = isinstance(updated.body, cst.IndentedBlock) and not updated.body.body and original.body.body
        if emptied and updated.orelse is None and only_tests(updated.test):
            return cst.RemoveFromParent()
        return updated

    def leave_SimpleStatementLine(self, original, updated):
        guard = self.guards[-1] if self.guards else None
        if updated.body or not original.body or guard is None or id(original) not in guard.lines:
            return updated
        if guard.probe is not None:
            return updated
        # The first import line the guard lost: the probe takes its place and its comments.
        guard.probe = cst.parse_statement(self.probe + "\n").with_changes(leading_lines=original.leading_lines)
        return guard.probe

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock):
        # A block whose first lines were removed imports does not start with a blank line.
        if not updated.body or not original.body or not _is_import_line(original.body[0]):
            return updated
        if updated.body[0].deep_equals(original.body[0]):
            return updated
        return updated.with_changes(body=[_without_leading_blanks(updated.body[0]), *updated.body[1:]])

    def leave_Import(self, original, updated: cst.Import):
        keep = []
        for alias in updated.names:
            dotted = code_of(alias.name)
            bound = alias.asname.name.value if alias.asname else dotted.split(".")[0]
            if not _is_legacy(dotted, self.legacy_prefixes):
                keep.append(alias)
            # A side-effect import such as "import torch_xla.distributed.xla_backend" goes too: it
            # only registered things on the legacy stack.
            elif bound not in self.used:
                self.removed.append(f"import {code_of(alias.name)}{as_clause(alias)}")
                self._note(original, removed=bound)
            else:
                keep.append(alias)
                self._note(original, removed="")
        return _rebuild(updated, keep)

    def leave_ImportFrom(self, original, updated: cst.ImportFrom):
        if updated.relative or updated.module is None or isinstance(updated.names, cst.ImportStar):
            return updated
        module = code_of(updated.module)
        keep = []
        for alias in updated.names:
            # A legacy API may live in a module that is not legacy as a whole (torch_neuronx.trace).
            legacy = _is_legacy(module, self.legacy_prefixes) or _is_legacy(
                f"{module}.{code_of(alias.name)}", self.legacy_prefixes
            )
            if not legacy:
                keep.append(alias)
            elif (alias.asname.name.value if alias.asname else code_of(alias.name)) in self.used:
                keep.append(alias)
                self._note(original, removed="")
            else:
                self.removed.append(f"from {code_of(updated.module)} import {code_of(alias.name)}{as_clause(alias)}")
                self._note(original, removed=alias.asname.name.value if alias.asname else code_of(alias.name))
        return _rebuild(updated, keep)

    def _note(self, statement, *, removed: str) -> None:
        """A legacy import of the innermost try guard around ``statement`` went (``removed`` names what it
        bound), or is still read (``removed`` empty)."""
        for guard in reversed(self.guards):
            if id(statement) in guard.imports:
                if removed:
                    guard.removed = True
                    guard.removed_names.add(removed)
                else:
                    guard.kept = True
                return


def _none_assigned(line) -> str | None:
    """``name = None`` on a line of its own: the name."""
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    small = line.body[0]
    if not isinstance(small, cst.Assign) or len(small.targets) != 1 or code_of(small.value) != "None":
        return None
    target = small.targets[0].target
    return target.value if isinstance(target, cst.Name) else None


def _probe_alone(body, handlers, node: cst.Try) -> bool:
    """Is the try nothing but the probe, with handlers that only ``pass``?"""
    if len(body) != 1 or not _is_import_line(body[0]) or node.orelse is not None or node.finalbody is not None:
        return False
    return all(_only_pass(handler.body) for handler in handlers)


def _only_pass(block) -> bool:
    lines = getattr(block, "body", ())
    return all(
        isinstance(line, cst.SimpleStatementLine) and all(isinstance(small, cst.Pass) for small in line.body)
        for line in lines
    ) or isinstance(block, cst.SimpleStatementSuite) and all(isinstance(small, cst.Pass) for small in block.body)


def _comment(line: cst.EmptyLine) -> str:
    return line.comment.value.strip() if line.comment is not None else ""


def _import_ids(block) -> set[int]:
    found = _ImportStatements()
    walk(block, found)
    return found.ids


class _ImportStatements(cst.CSTVisitor):
    def __init__(self) -> None:
        self.ids: set[int] = set()

    def visit_Import(self, node) -> bool:
        self.ids.add(id(node))
        return False

    def visit_ImportFrom(self, node) -> bool:
        self.ids.add(id(node))
        return False


def _imports_probe(body, probe: str, placed) -> bool:
    """Does ``body`` import what ``probe`` imports, on a line other than ``placed``?"""
    wanted = probe.split("#")[0].strip()
    return any(s is not placed and _is_import_line(s) and code_of(s).split("#")[0].strip() == wanted for s in body)


def as_clause(alias: cst.ImportAlias) -> str:
    return f" as {alias.asname.name.value}" if alias.asname else ""


def _rebuild(node, keep):
    if len(keep) == len(node.names):
        return node
    if not keep:
        return cst.RemoveFromParent()
    keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return node.with_changes(names=keep)


def probe_presence_tests(module: cst.Module, names, probe_name: str) -> tuple[cst.Module, frozenset[str]]:
    """``if met is not None:`` of a name a try guard's handler sets to None: once nothing but such tests
    reads the name (its other uses were migrated), the tests ask for ``probe_name`` instead, which the
    guard's probe binds and its handler sets to None (see _LegacyImportRemover). Returns the module and
    the names whose tests changed."""
    if not names:
        return module, frozenset()
    reads = _PresenceReads(set(names))
    walk(module, reads)
    only = frozenset(n for n in names if reads.total.get(n) and reads.total[n] == reads.presence.get(n))
    if not only:
        return module, only
    return module.visit(_ProbeTests(only, probe_name)), only


def _presence_operands(test: cst.BaseExpression):
    """The operands of a test that a bare name would be a presence test as: ``a``, ``a and b``, ``not a``,
    ``a is None``, ``a is not None``."""
    if isinstance(test, cst.BooleanOperation):
        yield from _presence_operands(test.left)
        yield from _presence_operands(test.right)
    elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        yield from _presence_operands(test.expression)
    elif isinstance(test, cst.Comparison) and _is_none_test(test):
        yield test.left
    else:
        yield test


def _is_none_test(node: cst.Comparison) -> bool:
    if len(node.comparisons) != 1:
        return False
    target = node.comparisons[0]
    return isinstance(target.operator, (cst.Is, cst.IsNot)) and code_of(target.comparator) == "None"


class _PresenceReads(cst.CSTVisitor):
    """How often each of ``names`` is read, and how often as a presence test."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.total: dict[str, int] = {}
        self.presence: dict[str, int] = {}

    def visit_Import(self, node) -> bool:
        return False

    def visit_ImportFrom(self, node) -> bool:
        return False

    def visit_AssignTarget(self, node) -> bool:
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        walk(node.value, self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.names:
            self.total[node.value] = self.total.get(node.value, 0) + 1

    def visit_If(self, node: cst.If) -> None:
        self._tested(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._tested(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._tested(node.test)

    def _tested(self, test) -> None:
        for operand in _presence_operands(test):
            if isinstance(operand, cst.Name) and operand.value in self.names:
                self.presence[operand.value] = self.presence.get(operand.value, 0) + 1


class _ProbeTests(cst.CSTTransformer):
    """Presence tests of ``names`` in branch tests, asking for ``to`` instead."""

    def __init__(self, names: frozenset[str], to: str) -> None:
        super().__init__()
        self.names = names
        self.to = to
        self.targets: set[int] = set()

    def _mark(self, test) -> None:
        self.targets.update(id(o) for o in _presence_operands(test) if isinstance(o, cst.Name) and o.value in self.names)

    def visit_If(self, node: cst.If) -> None:
        self._mark(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._mark(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._mark(node.test)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        return updated.with_changes(value=self.to) if id(original) in self.targets else updated


def remove_unused_legacy_imports(
    module: cst.Module,
    legacy_prefixes: tuple[str, ...],
    guard_names=(),
    probe: str = "",
    legacy_marker: str = "",
    probed: frozenset[str] = frozenset(),
) -> tuple[cst.Module, list[str], list[GuardOutcome]]:
    """Drop legacy imports nothing reads any more; returns the module, the removed imports as code, and
    what became of each ``try:`` guard of legacy imports. With ``probe`` (the import that tells whether
    TorchNeuron is installed), a guard whose legacy imports all went gets the probe in their place, so
    its except branch still runs where TorchNeuron is missing, and a guard with a legacy import still
    read gets ``legacy_marker`` above it; without ``probe`` guards are left as they are."""
    if not legacy_prefixes:
        return module, [], []
    is_guard = lambda n: is_shim(n, legacy_prefixes, guard_names)  # noqa: E731
    remover = _LegacyImportRemover(_NameUses(module), legacy_prefixes, is_guard, probe, legacy_marker, probed)
    cleaned = module.visit(remover)
    if cleaned.body and module.body and cleaned.body[0] is not module.body[0]:
        # The file's first lines were removed imports: do not leave it starting with blank lines.
        cleaned = cleaned.with_changes(body=[_without_leading_blanks(cleaned.body[0]), *cleaned.body[1:]])
    if legacy_marker:
        cleaned = _marker_once_in_header(cleaned, legacy_marker)
    return cleaned, remover.removed, sorted(remover.outcomes, key=lambda o: o.ordinal)


def _marker_once_in_header(module: cst.Module, marker: str) -> cst.Module:
    """Comments above a file's first statement parse as the module header: a guard that opens the file
    has its marker there on a rerun. Keep one copy, and none once the guard no longer needs it."""
    header = [line for line in module.header if _comment(line) == marker]
    if not header or not module.body:
        return module
    first = module.body[0]
    marked = any(_comment(line) == marker for line in getattr(first, "leading_lines", ()))
    if marked:
        lines = [line for line in first.leading_lines if _comment(line) != marker]
        module = module.with_changes(body=[first.with_changes(leading_lines=lines), *module.body[1:]])
        return module
    # the guard that opens the file no longer has its marker: the header's copy is stale
    return module.with_changes(header=[line for line in module.header if _comment(line) != marker])


def _without_leading_blanks(stmt):
    lines = list(stmt.leading_lines)
    while lines and lines[0].comment is None:
        lines.pop(0)
    return stmt.with_changes(leading_lines=lines)


def guard_probe_imports(module: cst.Module, requests, probe: str) -> tuple[cst.Module, list]:
    """Requested imports of the probe's package (``import torch_neuronx.metrics``) take the place of the
    probe in the first module-level ``try:`` that has it: dual-stack code imports them only where the
    device is there, and they fail as the probe did where it is not. Returns the module and the requests
    left to add as usual."""
    package = probe.split()[1].split(".")[0]
    mine = [r for r in requests if r.module.split(".")[0] == package]
    if not mine:
        return module, list(requests)
    wanted = probe.split("#")[0].strip()
    for index, stmt in enumerate(module.body):
        if not isinstance(stmt, cst.Try):
            continue
        lines = list(stmt.body.body)
        at = next((i for i, s in enumerate(lines) if _is_import_line(s) and code_of(s).split("#")[0].strip() == wanted), None)
        if at is None:
            continue
        new = [cst.parse_statement(text + "\n") for text in import_lines(mine)]
        new[0] = new[0].with_changes(leading_lines=lines[at].leading_lines)
        lines[at : at + 1] = new
        body = list(module.body)
        body[index] = stmt.with_changes(body=stmt.body.with_changes(body=lines))
        return module.with_changes(body=body), [r for r in requests if r not in mine]
    return module, list(requests)


def add_imports(module: cst.Module, requests) -> cst.Module:
    """Add the requested imports once: names from a module the file already imports from join
    that ``from ... import`` line; the rest go, sorted, after the file's leading import block."""
    if not requests:
        return module
    module, remaining = extend_from_imports(module, requests)
    statements = import_lines(remaining)
    if not statements:
        return module
    new = [cst.parse_statement(s + "\n") for s in statements]
    return _insert_after_imports(module, new)


def import_lines(requests) -> list[str]:
    """The import statements for ``requests``, one ``from`` line per module, sorted by module
    whichever the import form, the way isort's force_sort_within_sections does."""
    return sorted({_statement(group) for group in _grouped(requests)}, key=_module_key)


def with_own_imports(code: str, requests) -> str:
    """``code``, a helper definition, with the imports of ``requests`` it reads at the top of its body (after
    its docstring); other code as it is."""
    if not requests or not code.startswith(("def ", "class ")):
        return code
    statement = cst.parse_statement(code + "\n")
    read = _UsedNames()
    walk(statement.body, read)
    wanted = [r for r in requests if bound_by(r) in read.names]
    if not wanted or not isinstance(statement.body, cst.IndentedBlock):
        return code
    lines = list(statement.body.body)
    at = 1 if lines and _is_docstring(lines[0]) else 0
    new = [cst.parse_statement(text + "\n") for text in import_lines(wanted)]
    body = statement.body.with_changes(body=[*lines[:at], *new, *lines[at:]])
    return cst.Module(body=[statement.with_changes(body=body)]).code.rstrip("\n")


def bound_by(request) -> str:
    """The name an import request binds."""
    if request.name:
        return request.alias or request.name
    return request.alias or request.module.split(".")[0]


def names_read(node: cst.CSTNode) -> set[str]:
    """Every name ``node`` reads (attribute names aside), at any depth."""
    read = _UsedNames()
    walk(node, read)
    return read.names | read.strings


def add_setup(module: cst.Module, setup: dict[str, str]) -> cst.Module:
    """Insert start-up statements (each under its comment) after the import block; definitions
    (a helper function or class) go after the last import above the file's own definitions, so
    that they may use any module the file imports."""
    new, definitions = [], []
    for code, why in setup.items():
        statement = cst.parse_statement(code + "\n")
        lines = [cst.EmptyLine(comment=cst.Comment(f"# {why}"))] if why else []
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            # PEP 8: two blank lines before a top-level definition.
            definitions.append(statement.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine(), *lines]))
            continue
        if lines:
            statement = statement.with_changes(leading_lines=lines)
        new.append(statement)
    if new and not any(line.comment is None for line in new[0].leading_lines):
        new[0] = new[0].with_changes(leading_lines=[cst.EmptyLine(), *new[0].leading_lines])
    if new:
        module = _insert_after_imports(module, new)
    if definitions:
        position = _definition_position(module.body)
        module = _insert_after_imports(module, definitions, position)
        module = _two_blank_lines_before(module, position + len(definitions))
    return module


def _two_blank_lines_before(module: cst.Module, index: int) -> cst.Module:
    """PEP 8 wants two blank lines after a top-level definition too."""
    body = list(module.body)
    if index >= len(body):
        return module
    lines = list(body[index].leading_lines)
    blank = 0
    while blank < len(lines) and lines[blank].comment is None:
        blank += 1
    if blank >= 2:
        return module
    body[index] = body[index].with_changes(leading_lines=[*[cst.EmptyLine()] * (2 - blank), *lines])
    return module.with_changes(body=body)


def _insert_after_imports(module: cst.Module, new: list[cst.BaseStatement], position: int | None = None) -> cst.Module:
    body = list(module.body)
    if position is None:
        position = _insert_position(body)
    if position and _is_docstring(body[position - 1]) and not new[0].leading_lines:
        # Nothing was imported yet: keep a blank line under the docstring.
        new = [new[0].with_changes(leading_lines=[cst.EmptyLine()]), *new[1:]]
    rest = body[position:]
    if rest and not _is_import_line(rest[0]) and not any(line.comment is None for line in rest[0].leading_lines):
        # Keep the import block visually apart from the code it now sits on (PEP 8: two lines
        # before a top-level def or class).
        gap = 2 if isinstance(rest[0], (cst.FunctionDef, cst.ClassDef)) else 1
        rest[0] = rest[0].with_changes(leading_lines=[*[cst.EmptyLine()] * gap, *rest[0].leading_lines])
    return module.with_changes(body=[*body[:position], *new, *rest])


def _grouped(requests):
    """Plain imports one by one; ``from`` imports grouped per module."""
    names: dict[str, list] = {}
    for request in requests:
        if request.name:
            names.setdefault(request.module, []).append(request)
        else:
            yield (request,)
    yield from (tuple(group) for group in names.values())


def _module_key(statement: str) -> tuple[str, str]:
    return statement.split()[1].lower(), statement


def _statement(group) -> str:
    if len(group) == 1:
        return group[0].statement()
    return f"from {group[0].module} import {', '.join(sorted(r.name for r in group))}"


def extend_from_imports(module: cst.Module, requests):
    """Append requested names to the file's own top-level ``from <module> import a, b`` lines."""
    wanted: dict[str, list[str]] = {}
    for request in requests:
        if request.name and not request.alias:
            wanted.setdefault(request.module, []).append(request.name)
    if not wanted:
        return module, list(requests)
    first_use = _first_uses(module, {name for names in wanted.values() for name in names})
    extended: set[tuple[str, str]] = set()
    body = []
    for index, stmt in enumerate(module.body):
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            small = stmt.body[0]
            target = _extendable_module(small)
            # Only a line that runs before the name's first use can provide it.
            names = [n for n in wanted.get(target, ()) if (target, n) not in extended and first_use.get(n, index + 1) > index]
            if names:
                extended.update((target, n) for n in names)
                stmt = stmt.with_changes(body=[_with_names(small, names)])
        body.append(stmt)
    remaining = [r for r in requests if not (r.name and not r.alias and (r.module, r.name) in extended)]
    return module.with_changes(body=body), remaining


def _first_uses(module: cst.Module, names: set[str]) -> dict[str, int]:
    """The index of the first top-level statement of ``module`` that reads each of ``names``."""
    first: dict[str, int] = {}
    for index, stmt in enumerate(module.body):
        if _is_import_line(stmt):
            continue
        finder = _UsedNames()
        stmt.visit(finder)
        for name in (finder.names & names) - first.keys():
            first[name] = index
    return first


def _extendable_module(small) -> str:
    if not isinstance(small, cst.ImportFrom) or small.relative or small.module is None:
        return ""
    if isinstance(small.names, cst.ImportStar) or small.lpar is not None:
        return ""
    return code_of(small.module)


def _with_names(node: cst.ImportFrom, names: list[str]) -> cst.ImportFrom:
    present = [code_of(alias.name) for alias in node.names]
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    aliases = [alias.with_changes(comma=comma) for alias in node.names]
    aliases += [cst.ImportAlias(name=cst.Name(name), comma=comma) for name in sorted(set(names) - set(present))]
    if present == sorted(present, key=str.lower):
        # The line was sorted: keep it sorted.
        aliases.sort(key=lambda alias: code_of(alias.name).lower())
    aliases[-1] = aliases[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return node.with_changes(names=aliases)


def _is_import_line(stmt) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)


def _insert_position(body) -> int:
    position = 0
    for i, stmt in enumerate(body):
        if _is_docstring(stmt) and i == 0:
            position = 1
            continue
        if isinstance(stmt, cst.SimpleStatementLine) and all(
            isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
        ):
            position = i + 1
            continue
        break
    return position


def _definition_position(body) -> int:
    """After the last top-level import line above the first statement that may run the helper: a function
    or class, a compound statement, or a line that calls anything (a notebook's later cells, a module-level
    ``tracker = RateTracker()``). Plain settings between imports (``os.environ[...] = "1"``) are passed over."""
    position = _insert_position(body)
    for i, stmt in enumerate(body):
        if _is_import_line(stmt):
            position = i + 1
        elif not isinstance(stmt, cst.SimpleStatementLine) or _calls_anything(stmt):
            break
    return position


class _AnyCall(cst.CSTVisitor):
    found = False

    def visit_Call(self, node: cst.Call) -> bool:
        self.found = True
        return False


def _calls_anything(stmt: cst.SimpleStatementLine) -> bool:
    visitor = _AnyCall()
    stmt.visit(visitor)
    return visitor.found


def _is_docstring(stmt) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )
