"""The files a verified program is made of: its entry script and the modules of its folder it imports.

A divergence is explained by the edits of those files only: a folder of sibling example scripts (one script per
recipe) must not lend one script's edits to another. Launch scripts and other files that are not Python stay in,
since they set up how the program runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

MAX_MODULES = 400  # a huge package is followed in part; the entry script always counts


def program_files(script: Path, root: Path) -> set[Path]:
    """``script`` and every Python file under ``root`` it imports, directly or through another such file."""
    root, script = root.resolve(), script.resolve()
    found: set[Path] = set()
    waiting = [script]
    while waiting and len(found) < MAX_MODULES:
        path = waiting.pop()
        if path in found:
            continue
        found.add(path)
        waiting += [module for module in _imports(path, root) if module not in found]
    return found


def belongs(path: Path, files: set[Path]) -> bool:
    """Whether an edit or marker in ``path`` is one of the program's: a file of it, or a file that is not Python."""
    return path.suffix != ".py" or path.resolve() in files


def _imports(path: Path, root: Path) -> list[Path]:
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found += _resolve(alias.name, [root, path.parent])
        elif isinstance(node, ast.ImportFrom):
            base = _relative_base(path, node.level) if node.level else None
            bases = [base] if base is not None else [root, path.parent]
            module = node.module or ""
            found += [hit for base in bases for hit in _module_files(base, module)]
            # "from package import module" names a module as often as a function
            for alias in node.names:
                name = f"{module}.{alias.name}" if module else alias.name
                found += [hit for base in bases for hit in _module_files(base, name)]
    return [hit for hit in found if _inside(hit, root)]


def _resolve(dotted: str, bases: list[Path]) -> list[Path]:
    """The files ``import a.b.c`` runs: each package's ``__init__`` on the way, and the module."""
    parts = dotted.split(".")
    return [hit for base in bases for depth in range(1, len(parts) + 1)
            for hit in _module_files(base, ".".join(parts[:depth]))]


def _module_files(base: Path, dotted: str) -> list[Path]:
    if not dotted:
        init = base / "__init__.py"
        return [init.resolve()] if init.is_file() else []
    stem = base.joinpath(*dotted.split("."))
    return [candidate.resolve() for candidate in (stem.with_suffix(".py"), stem / "__init__.py")
            if candidate.is_file()]


def _relative_base(path: Path, level: int) -> Path | None:
    base = path.parent
    for _ in range(level - 1):
        base = base.parent
    return base


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
