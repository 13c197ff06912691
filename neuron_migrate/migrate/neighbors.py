"""The Python files and notebooks around a file: what a rule may read of the rest of its project.

Some answers are in another file: a serving script loads the model file that a compile script next to
it wrote, and only the compile script says what that file holds. The files read are those of the
file's own folder and of the folder above, and of the folders directly inside either: a SageMaker
``code/inference.py`` sits below the notebook that compiled its model, a ``serve/app.py`` beside the
``compile/`` folder. The walk is bounded (folder depth, file count, file size) so that a file in a
large repository costs a few directory listings; it never enters tool or environment folders, and never
goes above a repository's root or the folder the run started in (the projects next to it are not its own).

A result that depends on these files must be cached with them: :func:`signature` is their names,
sizes and modification times, which the content-hash cache adds to the key of such a file.
"""

from __future__ import annotations

import os

from neuron_migrate.migrate.discover import is_skipped_dir

SUFFIXES = (".py", ".ipynb")
MAX_FOLDERS = 100
MAX_FILES = 300
MAX_BYTES = 2_000_000  # what a reader of these files should read of one at most
VCS_MARKERS = (".git", ".hg", ".svn")


def _project_root(folder: str) -> bool:
    """A folder the walk does not go above: a repository's root, or the folder the run started in."""
    return any(os.path.exists(os.path.join(folder, name)) for name in VCS_MARKERS) or folder == os.getcwd()


def _folders(path: str) -> list[str]:
    """The file's folder, the one above (unless that is outside the project), and the folders directly
    inside either, in a fixed order."""
    own = os.path.dirname(os.path.abspath(path))
    parent = os.path.dirname(own)
    tops = [own] if parent == own or _project_root(own) else [own, parent]
    out: list[str] = []
    for top in tops:
        if top not in out:
            out.append(top)
        try:
            names = sorted(os.listdir(top))
        except OSError:
            continue
        for name in names:
            folder = os.path.join(top, name)
            if name.startswith(".") or folder in out or not os.path.isdir(folder) or os.path.islink(folder):
                continue
            if not is_skipped_dir(top, name):
                out.append(folder)
            if len(out) == MAX_FOLDERS:
                return out
    return out


def neighbor_files(path: str) -> list[str]:
    """The Python files and notebooks around ``path`` (itself left out), at most MAX_FILES of them."""
    own = os.path.abspath(path)
    found: list[str] = []
    for folder in _folders(path):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            full = os.path.join(folder, name)
            if not name.endswith(SUFFIXES) or full == own or not os.path.isfile(full):
                continue
            found.append(full)
            if len(found) == MAX_FILES:
                return found
    return found


def signature(path: str) -> bytes:
    """Names, sizes and modification times of the files around ``path``: what a cache key needs."""
    parts = []
    for full in neighbor_files(path):
        try:
            stat = os.stat(full)
        except OSError:
            continue
        parts.append(f"{full}\0{stat.st_size}\0{stat.st_mtime_ns}")
    return "\n".join(parts).encode("utf-8", "surrogateescape")
