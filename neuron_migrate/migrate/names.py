"""Names a module reads where nothing binds them, from Python's own symbol tables.

The engine compares the rewritten module with the original: a name the rewrite made it read where nothing
binds it (a helper at module level using an import that went into a function, a field of a removed
object) would fail the first time that line runs, so the file fails instead and is left as it was.
``symtable`` gives the scopes exactly as the compiler sees them (class bodies, comprehensions, ``global``
and ``nonlocal``), at the cost of a compile's first pass.
"""

from __future__ import annotations

import ast
import builtins
import symtable
from collections import Counter

# Names every module has without binding them.
_MODULE_NAMES = frozenset(
    {"__name__", "__file__", "__doc__", "__spec__", "__loader__", "__package__", "__builtins__", "__path__",
     "__annotations__", "__dict__", "__debug__", "__cached__", "__class__"}
)
_BUILTINS = frozenset(dir(builtins)) | _MODULE_NAMES


def unbound_reads(code: str, path: str = "<module>") -> Counter[str] | None:
    """How many scopes of ``code`` read each name that no scope around them binds; None when that cannot
    be known (a star import, or a module the symbol tables refuse)."""
    try:
        top = symtable.symtable(code, path, "exec")
    except (SyntaxError, ValueError):
        return None
    if _has_star_import(code):
        return None
    bound = {s.get_name() for s in top.get_symbols() if s.is_local() or s.is_imported() or s.is_assigned()}
    tables = list(_tables(top))
    for table in tables:
        bound.update(s.get_name() for s in table.get_symbols() if s.is_declared_global() and s.is_assigned())
    bound |= _BUILTINS
    found = _Reads()
    for table in tables:
        for symbol in table.get_symbols():
            name = symbol.get_name()
            if symbol.is_referenced() and symbol.is_global() and name not in bound:
                found[name] += 1
                found.scopes.setdefault(name, table.get_name())
    return found


class _Reads(Counter):
    """Unbound reads per name, and the first scope each is read in."""

    def __init__(self) -> None:
        super().__init__()
        self.scopes: dict[str, str] = {}


def new_unbound_reads(before: str, after: str, path: str = "<module>", after_tree: ast.Module | None = None) -> list[str]:
    """The names ``after`` reads unbound in more scopes than ``before`` does, each with the scope it is read
    in (``dist in _average_gradients``), and the names its module-level code reads before the module binds
    them, more often than ``before`` does (an import a notebook's later cell makes); empty when either
    cannot be read. ``before`` is only read when ``after`` has such names at all."""
    new = unbound_reads(after, path)
    early = early_reads(after_tree if after_tree is not None else ast.parse(after))
    if not new and not early:
        return []
    old = unbound_reads(before, path) if new else Counter()
    if old is None:
        return []
    old_early = early_reads(ast.parse(before)) if early else Counter()
    found = [f"`{name}` in {_scope(new.scopes[name])}" for name, count in sorted(new.items()) if count > old.get(name, 0)]
    found += [f"`{name}` at module level before it is bound" for name, count in sorted(early.items()) if count > old_early.get(name, 0)]
    return found


def early_reads(tree: ast.Module) -> Counter[str]:
    """Names module-level code reads before the module first binds them, statement by statement (function
    bodies run later and are not counted; a statement's own bindings count as bound for it)."""
    bound_anywhere = set()
    per_statement = []
    for statement in tree.body:
        binds = _bindings(statement)
        bound_anywhere |= binds
        per_statement.append((statement, binds))
    seen: set[str] = set()
    found: Counter[str] = Counter()
    for statement, binds in per_statement:
        for name in _module_level_reads(statement):
            if name in bound_anywhere and name not in seen and name not in binds:
                found[name] += 1
        seen |= binds
    return found


def _bindings(statement: ast.stmt) -> set[str]:
    names = set()
    for node in _walk_module_level(statement):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def _module_level_reads(statement: ast.stmt) -> set[str]:
    return {n.id for n in _walk_module_level(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _walk_module_level(node: ast.AST):
    """The nodes of ``node`` that run when the module runs: not the bodies of functions and lambdas (their
    decorators, defaults and annotations do run)."""
    yield node
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        children = [*node.decorator_list, *node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    elif isinstance(node, ast.Lambda):
        children = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    else:
        children = list(ast.iter_child_nodes(node))
    for child in children:
        yield from _walk_module_level(child)


def _scope(name: str) -> str:
    return "the module" if name == "top" else f"`{name}`"


def _tables(table: symtable.SymbolTable):
    yield table
    for child in table.get_children():
        yield from _tables(child)


def _has_star_import(code: str) -> bool:
    # symtable does not list ``from m import *``; a module that has one can bind any name
    return "import *" in code or "import  *" in code
