"""Paths on the command line -> the sorted, de-duplicated files a run processes.

Folders are walked without following symlinked folders, so a link back up the tree cannot loop.
Tool and environment folders are never entered, ``.gitignore`` files (the repository's, and nested
ones) and the configured excludes are honoured. Files named explicitly are taken even when
gitignored, as pre-commit passes staged files, but not when the configuration excludes them.

A symlinked file is processed through its target, and only when the target lies inside the tree
that was asked for: rewriting a file elsewhere on the disk because a link points at it would be a
surprise. Such links are reported as skipped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neuron_migrate.report.model import EXCLUDED

if TYPE_CHECKING:
    from neuron_migrate.config import Config

PYTHON = "python"
NOTEBOOK = "notebook"
SHELL = "shell"
REQUIREMENTS = "requirements"
PYPROJECT = "pyproject"
SETUP_CFG = "setup_cfg"
CONDA_ENV = "conda_env"
DOCKERFILE = "dockerfile"

# File suffix -> the kind of source adapter that handles it.
KINDS_BY_SUFFIX = {".py": PYTHON, ".ipynb": NOTEBOOK, ".sh": SHELL, ".bash": SHELL}
# Whole file names (lower case) -> kind; requirement files are matched by pattern below.
KINDS_BY_NAME = {
    "pyproject.toml": PYPROJECT,
    "setup.cfg": SETUP_CFG,
    "environment.yml": CONDA_ENV,
    "environment.yaml": CONDA_ENV,
}
REQUIREMENT_NAME = re.compile(r"(.*[-_.])?requirements([-_.].*)?\.(txt|in)|constraints([-_.].*)?\.txt")
DOCKERFILE_NAME = re.compile(r"(docker|container)file(\.[^/]+)?|[^/]+\.(docker|container)file")

# Folders that never hold the user's own source: VCS data, caches, installed packages.
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        "node_modules",
        ".tox",
        ".nox",
        ".venv",
        "site-packages",
        ".eggs",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".ipynb_checkpoints",
    }
)
# A folder holding one of these is a Python environment whatever it is called.
ENV_MARKERS = ("pyvenv.cfg", "conda-meta")


@dataclass(frozen=True)
class SourceFile:
    path: Path  # where it was found (a link keeps its own name), absolute
    real: Path  # the file that is read and replaced, absolute
    kind: str
    link: bool = False


@dataclass(frozen=True)
class Skipped:
    path: Path
    reason: str


@dataclass
class Discovery:
    files: list[SourceFile] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    # Paths that were asked for but cannot be processed at all (missing): the run fails on them.
    errors: list[Skipped] = field(default_factory=list)


def kind_of(path: str | Path) -> str | None:
    name = os.path.basename(str(path)).lower()
    kind = KINDS_BY_SUFFIX.get(os.path.splitext(name)[1]) or KINDS_BY_NAME.get(name)
    if kind is None and REQUIREMENT_NAME.fullmatch(name):
        kind = REQUIREMENTS
    if kind is None and DOCKERFILE_NAME.fullmatch(name):
        kind = DOCKERFILE
    if kind is None and name.endswith((".txt", ".in")):
        # requirements/base.txt, requirements/train.in
        kind = REQUIREMENTS if os.path.basename(os.path.dirname(os.path.abspath(str(path)))) == "requirements" else None
    return kind


def is_skipped_dir(folder: str, name: str) -> bool:
    if name in SKIP_DIRS:
        return True
    return any(os.path.exists(os.path.join(folder, name, marker)) for marker in ENV_MARKERS)


def discover(paths: Sequence[Path | str], config: Config) -> Discovery:
    out = Discovery()
    root = Path(os.path.abspath(config.root))
    excludes = _Matcher.build(config.excludes)
    found: list[SourceFile] = []
    for given in paths:
        path = Path(os.path.abspath(given))
        if not os.path.lexists(path):
            out.errors.append(Skipped(path, "no such file or folder"))
        elif excludes and excludes.matches(_relative(path, root), os.path.isdir(path)):
            if not os.path.isdir(path):
                out.skipped.append(Skipped(path, EXCLUDED))
        elif os.path.isdir(path):
            found.extend(_walk(path, root, excludes, out))
        else:
            source = _explicit_file(path, root, out)
            if source is not None:
                found.append(source)
    trees = [Path(os.path.abspath(p)).resolve() for p in paths if os.path.isdir(p)]
    found.extend(_included(found, trees, root, excludes))
    out.files = _unique(found)
    out.skipped.sort(key=lambda s: str(s.path))
    return out


# `-r base.txt`, `--requirement=base.txt`, `-c constraints/prod.txt` at the start of a requirements line.
_INCLUDE = re.compile(rb"^[ \t]*(?:-r|--requirement|-c|--constraint)(?:[ \t]*=[ \t]*|[ \t]+)(\S+)", re.MULTILINE)


def _included(found: list[SourceFile], trees: list[Path], root: Path, excludes: _Matcher | None) -> list[SourceFile]:
    """Files that requirement files include with ``-r`` / ``-c`` under names the walk does not
    recognise (``-r common.txt``): they hold dependencies too. Only files inside a folder being
    migrated, and not excluded, are followed."""
    known = {os.path.normcase(str(s.real)) for s in found}
    queue = [s for s in found if s.kind == REQUIREMENTS]
    added: list[SourceFile] = []
    while queue:
        source = queue.pop()
        try:
            data = source.real.read_bytes()
        except OSError:
            continue
        for match in _INCLUDE.finditer(data):
            name = os.fsdecode(match.group(1))
            if "://" in name or "$" in name:
                continue
            target = (source.real.parent / name).resolve()
            key = os.path.normcase(str(target))
            if key in known or not target.is_file() or not any(_inside(target, tree) for tree in trees):
                continue
            if excludes and excludes.matches(_relative(target, root), False):
                continue
            known.add(key)
            included = SourceFile(target, target, REQUIREMENTS)
            added.append(included)
            queue.append(included)
    return added


def _explicit_file(path: Path, root: Path, out: Discovery) -> SourceFile | None:
    kind = kind_of(path)
    if kind is None:
        out.skipped.append(Skipped(path, "not a file type neuron-migrate rewrites"))
        return None
    tree = root if _inside(path, root) else path.parent
    return _source(path, kind, tree, out)


def _source(path: Path, kind: str, tree: Path, out: Discovery) -> SourceFile | None:
    if not path.is_symlink():
        return SourceFile(path, path.resolve(), kind)
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        # RuntimeError: Python < 3.13 reports a symlink loop this way.
        out.skipped.append(Skipped(path, "broken or looping symlink"))
        return None
    if not target.is_file():
        out.skipped.append(Skipped(path, "symlink to something that is not a file"))
        return None
    if not _inside(target, tree.resolve()):
        out.skipped.append(Skipped(path, f"symlink to {target}, outside the tree being migrated"))
        return None
    return SourceFile(path, target, kind, link=True)


def _walk(top: Path, root: Path, excludes: _Matcher | None, out: Discovery) -> Iterable[SourceFile]:
    tree = top.resolve()
    above = _ancestor_ignores(top, root)
    if _ignored(str(top), True, above):
        # A folder named on the command line is wanted even if gitignored, like a named file.
        above = []
    ignores: dict[str, list[tuple[str, _Matcher]]] = {str(top): above}
    for folder, dirnames, filenames in os.walk(top, followlinks=False):
        chain = ignores.pop(folder, [])
        # Folder links are never followed, so below the top a real path is the top's plus the rest.
        real_folder = tree / os.path.relpath(folder, top) if folder != str(top) else tree
        if ".gitignore" in filenames:
            spec = _Matcher.from_file(os.path.join(folder, ".gitignore"))
            if spec is not None:
                chain = [*chain, (folder, spec)]
        kept = []
        for name in sorted(dirnames):
            sub = os.path.join(folder, name)
            if is_skipped_dir(folder, name) or _ignored(sub, True, chain):
                continue
            if excludes and excludes.matches(_relative(Path(sub), root), True):
                continue
            kept.append(name)
            ignores[sub] = chain
        dirnames[:] = kept
        # the full path: requirements/base.txt is a requirement file by its folder
        wanted = [
            (name, kind) for name in sorted(filenames) if (kind := kind_of(os.path.join(folder, name))) is not None
        ]
        links = _links(folder) if wanted else set()
        for name, kind in wanted:
            full = os.path.join(folder, name)
            if _ignored(full, False, chain):
                continue
            if excludes and excludes.matches(_relative(Path(full), root), False):
                continue
            if name in links:
                source = _source(Path(full), kind, tree, out)
            else:
                source = SourceFile(Path(full), real_folder / name, kind)
            if source is not None:
                yield source


def _links(folder: str) -> set[str]:
    """Names of the symlinks in ``folder``: one scandir, whose entries know without a stat each."""
    with os.scandir(folder) as entries:
        return {e.name for e in entries if e.is_symlink()}


def _unique(found: list[SourceFile]) -> list[SourceFile]:
    """One entry per real file; a plain path wins over a link to the same file."""
    by_real: dict[str, SourceFile] = {}
    for source in sorted(found, key=lambda s: (s.link, str(s.path))):
        by_real.setdefault(os.path.normcase(str(source.real)), source)
    return sorted(by_real.values(), key=lambda s: str(s.path))


def _inside(path: Path, tree: Path) -> bool:
    try:
        path.relative_to(tree)
    except ValueError:
        return False
    return True


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        # Outside the project: patterns without a slash ("*_pb2.py", "vendor/") still apply.
        return path.as_posix().lstrip("/")


# ----- .gitignore ---------------------------------------------------------------------------------
def _ancestor_ignores(top: Path, root: Path) -> list[tuple[str, _Matcher]]:
    """The .gitignore files above ``top`` that still govern it: up to the repository root, or
    up to the project root when there is no repository."""
    folders = []
    for folder in top.parents:
        folders.append(folder)
        if (folder / ".git").exists():
            break
    else:
        folders = [f for f in top.parents if _inside(f, root)]
    chain = []
    for folder in reversed(folders):
        spec = _Matcher.from_file(str(folder / ".gitignore"))
        if spec is not None:
            chain.append((str(folder), spec))
    return chain


def _ignored(path: str, is_dir: bool, chain: list[tuple[str, _Matcher]]) -> bool:
    """git's rule: the deepest .gitignore with a matching pattern decides, and within a file the
    last matching pattern (so ``!keep.py`` can re-include)."""
    decision = False
    for folder, spec in chain:
        relative = os.path.relpath(path, folder).replace(os.sep, "/")
        verdict = spec.verdict(relative, is_dir)
        if verdict is not None:
            decision = verdict
    return decision


def path_matcher(patterns: Iterable[str]) -> _Matcher | None:
    """gitwildmatch patterns as ``exclude`` reads them (``verdict(relative_path, is_dir)``)."""
    return _Matcher.build(patterns)


class _Matcher:
    """gitwildmatch patterns (pathspec is imported only when a project has patterns at all)."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec

    @classmethod
    def build(cls, patterns: Iterable[str]) -> _Matcher | None:
        lines = [p for p in patterns if p.strip() and not p.lstrip().startswith("#")]
        if not lines:
            return None
        import pathspec

        return cls(pathspec.GitIgnoreSpec.from_lines(lines))

    @classmethod
    def from_file(cls, path: str) -> _Matcher | None:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                return cls.build(fh.read().splitlines())
        except OSError:
            return None

    def verdict(self, relative: str, is_dir: bool) -> bool | None:
        result = self.spec.check_file(relative + "/" if is_dir else relative)
        return result.include

    def matches(self, relative: str, is_dir: bool) -> bool:
        if relative in ("", "."):
            return False
        return bool(self.verdict(relative, is_dir))
