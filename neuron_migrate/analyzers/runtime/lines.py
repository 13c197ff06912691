"""Which line of the user's code a runtime event belongs to.

An op, a compilation or a graph break happens deep inside PyTorch (and often inside a library such as
transformers); the finding must point at the user's own line. ``Attribution.locate`` walks a stack from the
innermost frame outwards and picks the first frame of user code: not PyTorch, not neuron-migrate (the emulator
included), not an installed package, not the standard library. When there is none it falls back to the innermost
frame of an installed package, then to the innermost frame outside PyTorch.
"""

from __future__ import annotations

import linecache
import os
import re
import sysconfig
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

USER = "user"
LIBRARY = "library"
INFRA = "infra"  # PyTorch, neuron-migrate, the standard library, generated code
TORCH = "torch"

_TRACEBACK_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<name>.+))?$')


@dataclass(frozen=True)
class Location:
    path: str  # relative to the working directory when inside it, else absolute
    line: int
    text: str  # the source line, stripped
    filename: str  # absolute

    @property
    def column(self) -> int:
        raw = linecache.getline(self.filename, self.line)
        return len(raw) - len(raw.lstrip()) + 1 if raw.strip() else 1

    @property
    def end_column(self) -> int:
        raw = linecache.getline(self.filename, self.line)
        return len(raw.rstrip()) + 1 if raw.strip() else 1

    def short(self) -> str:
        return f"{self.path}:{self.line}"


class Attribution:
    """Classifies source files and turns stacks into user locations. ``user_roots`` are folders whose files are
    always the user's (the analysed script's folder, even when it sits inside an installed package)."""

    def __init__(self, user_roots: Iterable[str | os.PathLike] = ()) -> None:
        import torch

        self._torch = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
        self._own = str(Path(__file__).resolve().parents[2]) + os.sep  # the neuron_migrate package
        paths = sysconfig.get_paths()
        self._stdlib = tuple(
            {os.path.abspath(p) + os.sep for p in (paths.get("stdlib"), paths.get("platstdlib"), os.path.dirname(os.__file__)) if p}
        )
        self._roots = tuple(os.path.abspath(r) + os.sep for r in user_roots)
        self._kinds: dict[str, str] = {}
        self._cwd = os.getcwd()

    def kind(self, filename: str) -> str:
        found = self._kinds.get(filename)
        if found is None:
            found = self._kinds[filename] = self._classify(filename)
        return found

    def _classify(self, filename: str) -> str:
        if not filename or filename.startswith("<"):
            return INFRA  # FX-generated graph code, <frozen runpy>, <string>
        path = os.path.abspath(filename)
        if path.startswith(self._torch):
            return TORCH
        if path.startswith(self._own):
            return INFRA
        if self._roots and path.startswith(self._roots):
            return USER
        parts = Path(path).parts
        if "site-packages" in parts or "dist-packages" in parts:
            return LIBRARY
        if path.startswith(self._stdlib):
            return INFRA
        return USER

    def location(self, filename: str, line: int) -> Location:
        path = os.path.abspath(filename)
        try:
            rel = os.path.relpath(path, self._cwd)
        except ValueError:  # another drive
            rel = path
        shown = Path(rel).as_posix() if not rel.startswith("..") else Path(path).as_posix()
        return Location(shown, line, linecache.getline(path, line).strip(), path)

    def locate(self, frames: Iterable[tuple[str, int]]) -> tuple[Location | None, Location | None]:
        """(user location, origin) for frames given innermost first. The origin is the innermost frame outside
        PyTorch and neuron-migrate: where the event came from, which may be a library."""
        user = library = outside_torch = origin = None
        for filename, line in frames:
            kind = self.kind(filename)
            if kind == USER:
                user = (filename, line)
                if origin is None:
                    origin = user
                break
            if kind == LIBRARY:
                library = library or (filename, line)
                origin = origin or (filename, line)
            if kind != TORCH and outside_torch is None and not filename.startswith("<"):
                outside_torch = (filename, line)
        chosen = user or library or outside_torch
        return (
            self.location(*chosen) if chosen else None,
            self.location(*origin) if origin else None,
        )

    def torch_path(self, filename: str) -> str | None:
        """The file's path inside the torch package ("optim/adamw.py"), or None outside it."""
        path = os.path.abspath(filename)
        return Path(path[len(self._torch):]).as_posix() if path.startswith(self._torch) else None

    def is_user(self, filename: str) -> bool:
        return self.kind(filename) == USER

    def is_own(self, filename: str) -> bool:
        """Code of neuron-migrate itself (the emulator runs inside the user's program)."""
        return bool(filename) and os.path.abspath(filename).startswith(self._own)


def live_frames(start, skip=None) -> Iterator[tuple[str, int]]:
    """(filename, line) of a live stack from frame ``start`` outwards, without the frames ``skip`` rejects."""
    frame = start
    while frame is not None:
        if skip is None or not skip(frame):
            yield frame.f_code.co_filename, frame.f_lineno or frame.f_code.co_firstlineno
        frame = frame.f_back


def traceback_frames(text: str) -> list[tuple[str, int]]:
    """(filename, line) of each ``File "...", line N`` entry of a formatted traceback, innermost first."""
    found = []
    for raw in text.splitlines():
        match = _TRACEBACK_FRAME.match(raw)
        if match:
            found.append((match["file"], int(match["line"])))
    found.reverse()
    return found
