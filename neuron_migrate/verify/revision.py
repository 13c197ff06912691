"""``git:REV`` as the legacy side: the migrated path as it was at a revision of its repository.

A project migrated in place keeps its legacy version only in git. ``git archive`` exports the revision's tree
into a folder of its own (the working tree is not touched); the legacy path is the migrated one inside it.
Files git does not track (local data, checkpoints) are not in the export.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

PREFIX = "git:"


class RevisionError(Exception):
    pass


def is_revision(target: str) -> bool:
    return target.startswith(PREFIX)


def export(target: str, migrated: Path, into: Path) -> Path:
    """Export the revision named by ``target`` (``git:REV``) of the repository holding ``migrated`` into
    ``into``, and return where ``migrated`` is in it."""
    rev = target[len(PREFIX):] or "HEAD"
    place = migrated.resolve()
    folder = place if place.is_dir() else place.parent
    root = Path(_git(folder, "rev-parse", "--show-toplevel").decode().strip())
    archive = _git(root, "archive", "--format=tar", rev)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    found = into / place.relative_to(root)
    if not found.exists():
        raise RevisionError(f"{target}: {place.relative_to(root)} is not in that revision")
    return found


def _git(folder: Path, *args: str) -> bytes:
    try:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, timeout=120)
    except FileNotFoundError:
        raise RevisionError("git:REV needs git on the PATH") from None
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise RevisionError(f"git {' '.join(args[:1])} in {folder}: {message[-1] if message else 'failed'}")
    return done.stdout
