"""Showing and making a change: unified diffs and atomic file replacement.

A file is either left alone or replaced whole: the new content goes to a temporary file in the
same folder (so the final rename cannot cross file systems), is flushed to disk, gets the old
permission bits, and only then takes the old file's place with one ``os.replace``. An interrupt
that arrives meanwhile is held until the file is settled, so Ctrl-C never leaves half a file or
a stray temporary one.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

TEMP_SUFFIX = ".neuron-migrate.tmp"


def split_lines(text: str) -> list[str]:
    """Lines with their own endings. ``str.splitlines`` would also split on form feeds and other
    characters Python source treats as ordinary text."""
    return io.StringIO(text, newline="").readlines()


def unified_diff(old: str, new: str, path: str) -> str:
    """A ``git apply``-able diff with ``a/`` and ``b/`` prefixes, like ``git diff``."""
    import difflib

    out = []
    for line in difflib.unified_diff(split_lines(old), split_lines(new), f"a/{path}", f"b/{path}"):
        if line.endswith(("\n", "\r")):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def atomic_write(path: str | Path, data: bytes) -> None:
    """Replace ``path`` with ``data``; keeps the permission bits of the file it replaces."""
    path = os.fspath(path)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    folder, name = os.path.split(os.path.abspath(path))
    with interrupts_deferred():
        fd, temp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=TEMP_SUFFIX)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            if mode is not None:
                os.chmod(temp, mode)
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold SIGINT for the duration of the block and deliver it afterwards.

    Signal handlers can only be changed from the main thread; elsewhere the block runs as is and
    the except clause of the caller still cleans up.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if received:
            if callable(previous):
                previous(signal.SIGINT, None)
            elif previous != signal.SIG_IGN:
                raise KeyboardInterrupt
