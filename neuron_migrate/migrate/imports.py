"""Import edits applied once per file after the rules ran: add what rules asked for, drop legacy
imports whose names the rewritten code no longer uses.

Only imports of legacy modules are ever removed: the tool does not tidy the user's other imports.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper

from neuron_migrate.migrate.context import code_of
from neuron_migrate.migrate.walk import walk


def is_legacy_import_block(block, legacy_prefixes: tuple[str, ...]) -> bool:
    for stmt in getattr(block, "body", ()):
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Import):
                names = [code_of(a.name) for a in small.names]
            elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
                module = code_of(small.module)
                names = [module]
                if not isinstance(small.names, cst.ImportStar):
                    names += [f"{module}.{code_of(a.name)}" for a in small.names]
            else:
                continue
            if any(_is_legacy(n, legacy_prefixes) for n in names):
                return True
    return False


def _is_legacy(dotted: str, legacy_prefixes: tuple[str, ...]) -> bool:
    return any(dotted == p or dotted.startswith(p + ".") for p in legacy_prefixes)


class _UsedNames(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()
        self.strings: set[str] = set()
        # Names something other than a module-level import binds: only these can shadow one.
        self.rebound: set[str] = set()

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
        # Names listed in __all__ or used in string annotations still count as uses.
        text = node.evaluated_value if isinstance(node.evaluated_value, str) else ""
        if text.isidentifier():
            self.strings.add(text)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._rebinds(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._rebinds(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
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


class _LegacyImportRemover(cst.CSTTransformer):
    def __init__(self, used: _NameUses, legacy_prefixes: tuple[str, ...], is_shim) -> None:
        super().__init__()
        self.used = used
        self.legacy_prefixes = legacy_prefixes
        self.is_shim = is_shim
        self.removed: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        # An import's own parts are read in leave_Import/leave_ImportFrom, which still run.
        return isinstance(node, _IMPORT_HOLDERS) and super().on_visit(node)

    def visit_Try(self, node: cst.Try) -> bool:
        return not self.is_shim(node)

    def visit_If(self, node: cst.If) -> bool:
        return not self.is_shim(node)

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
            # A side-effect import such as "import torch_xla.distributed.xla_backend" goes too: it
            # only registered things on the legacy stack.
            if _is_legacy(dotted, self.legacy_prefixes) and bound not in self.used:
                self.removed.append(f"import {code_of(alias.name)}{as_clause(alias)}")
                continue
            keep.append(alias)
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
            if not legacy or (alias.asname.name.value if alias.asname else code_of(alias.name)) in self.used:
                keep.append(alias)
            else:
                self.removed.append(f"from {code_of(updated.module)} import {code_of(alias.name)}{as_clause(alias)}")
        return _rebuild(updated, keep)


def as_clause(alias: cst.ImportAlias) -> str:
    return f" as {alias.asname.name.value}" if alias.asname else ""


def _rebuild(node, keep):
    if len(keep) == len(node.names):
        return node
    if not keep:
        return cst.RemoveFromParent()
    keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return node.with_changes(names=keep)


def remove_unused_legacy_imports(module: cst.Module, legacy_prefixes: tuple[str, ...]) -> tuple[cst.Module, list[str]]:
    """Drop legacy imports nothing reads any more; returns the module and the removed imports as code."""
    if not legacy_prefixes:
        return module, []
    remover = _LegacyImportRemover(_NameUses(module), legacy_prefixes, lambda n: is_shim(n, legacy_prefixes))
    cleaned = module.visit(remover)
    if cleaned.body and module.body and cleaned.body[0] is not module.body[0]:
        # The file's first lines were removed imports: do not leave it starting with blank lines.
        cleaned = cleaned.with_changes(body=[_without_leading_blanks(cleaned.body[0]), *cleaned.body[1:]])
    return cleaned, remover.removed


def _without_leading_blanks(stmt):
    lines = list(stmt.leading_lines)
    while lines and lines[0].comment is None:
        lines.pop(0)
    return stmt.with_changes(leading_lines=lines)


# Guards that mean "this branch only runs on the legacy stack"; the code inside is reported once
# as a compatibility shim and left alone, so dual-stack code keeps working on both sides.
SHIM_GUARDS = (
    "is_torch_xla_available",
    "is_torch_tpu_available",
    "is_neuronx_available",
    "is_torch_neuronx_available",
    "is_neuronx_distributed_available",
    "is_optimum_neuron_available",
)


def is_shim(node: cst.CSTNode, legacy_prefixes: tuple[str, ...]) -> bool:
    """``try: import torch_xla ...`` (any handler) and ``if is_torch_xla_available(): ...``."""
    if isinstance(node, cst.Try):
        return is_legacy_import_block(node.body, legacy_prefixes)
    if isinstance(node, cst.If):
        test = code_of(node.test)
        return any(guard in test for guard in SHIM_GUARDS)
    return False


def add_imports(module: cst.Module, requests) -> cst.Module:
    """Add the requested imports once: names from a module the file already imports from join
    that ``from ... import`` line; the rest go, sorted, after the file's leading import block."""
    if not requests:
        return module
    module, remaining = _extend_from_imports(module, requests)
    statements = import_lines(remaining)
    if not statements:
        return module
    new = [cst.parse_statement(s + "\n") for s in statements]
    return _insert_after_imports(module, new)


def import_lines(requests) -> list[str]:
    """The import statements for ``requests``, one ``from`` line per module, sorted by module
    whichever the import form, the way isort's force_sort_within_sections does."""
    return sorted({_statement(group) for group in _grouped(requests)}, key=_module_key)


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


def _extend_from_imports(module: cst.Module, requests):
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
