"""Showing and making a change: unified diffs (in linear time) and atomic file replacement.

A file is either left alone or replaced whole: the new content goes to a temporary file in the
same folder (so the final rename cannot cross file systems), is flushed to disk, gets the old
permission bits, and only then takes the old file's place with one ``os.replace``. An interrupt
(Ctrl-C, SIGTERM) that arrives meanwhile is held until the file is settled, so it never leaves half
a file or a stray temporary one.
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
    """A ``git apply``-able diff with ``a/`` and ``b/`` prefixes, like ``git diff``; "" when diffs are
    turned off (see :func:`diffs_computed`) or nothing changed."""
    if not _diffs[-1]:
        return ""
    a, b = split_lines(old), split_lines(new)
    if a == b:
        return ""
    out = [f"--- a/{path}\n", f"+++ b/{path}\n"]
    for group in _hunks(_opcodes(matching_blocks(a, b), len(a), len(b)), CONTEXT):
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(_marked(" ", a[i1:i2]))
                continue
            out.extend(_marked("-", a[i1:i2]))
            out.extend(_marked("+", b[j1:j2]))
    return "".join(out)


# ----- when diffs are computed ---------------------------------------------------------------------------
# A diff is only shown by `--diff` and by the reports that carry one; a run that needs none turns them
# off around the adapters, which then skip the work (a stack, so nested uses restore what they found).
_diffs = [True]


@contextlib.contextmanager
def diffs_computed(enabled: bool) -> Iterator[None]:
    _diffs.append(enabled)
    try:
        yield
    finally:
        _diffs.pop()


# ----- a diff in linear time -----------------------------------------------------------------------------
# difflib's matcher looks for the longest common block again inside every gap, which turns quadratic on
# a file with many similar edited lines (thousands of `xm.mark_step()` becoming the same new call). Here
# lines that occur once on each side anchor the alignment (patience diff): they are matched in order with
# a longest increasing subsequence, the gaps between them are aligned the same way a few levels deep, and
# a gap without such a line goes to difflib only when it is small; otherwise it is one replaced block.
# Each level costs a pass over the lines, so the whole diff is linear; the output is a valid unified
# diff, though not always the shortest one.
CONTEXT = 3
MAX_DEPTH = 8
SMALL_GAP = 4096  # old lines x new lines up to which a gap without anchors is left to difflib


def matching_blocks(a: list[str], b: list[str]) -> list[tuple[int, int, int]]:
    """(i, j, n) runs with ``a[i:i+n] == b[j:j+n]``, increasing in both, ending with ``(len(a), len(b), 0)``
    as ``difflib.SequenceMatcher.get_matching_blocks`` does."""
    blocks: list[tuple[int, int, int]] = []
    _align(a, b, 0, len(a), 0, len(b), 0, blocks)
    merged: list[tuple[int, int, int]] = []
    for i, j, n in blocks:
        if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
            merged[-1] = (merged[-1][0], merged[-1][1], merged[-1][2] + n)
        elif n:
            merged.append((i, j, n))
    merged.append((len(a), len(b), 0))
    return merged


def _align(a, b, alo: int, ahi: int, blo: int, bhi: int, depth: int, out: list) -> None:
    start = alo
    while alo < ahi and blo < bhi and a[alo] == b[blo]:
        alo, blo = alo + 1, blo + 1
    if alo > start:
        out.append((start, blo - (alo - start), alo - start))
    tail = 0
    while ahi - tail > alo and bhi - tail > blo and a[ahi - tail - 1] == b[bhi - tail - 1]:
        tail += 1
    ahi, bhi = ahi - tail, bhi - tail
    if alo < ahi and blo < bhi:
        anchors = _anchors(a, b, alo, ahi, blo, bhi) if depth < MAX_DEPTH else []
        if anchors:
            i, j = alo, blo
            for ai, bj in anchors:
                _align(a, b, i, ai, j, bj, depth + 1, out)
                out.append((ai, bj, 1))
                i, j = ai + 1, bj + 1
            _align(a, b, i, ahi, j, bhi, depth + 1, out)
        elif (ahi - alo) * (bhi - blo) <= SMALL_GAP:
            _small_gap(a, b, alo, ahi, blo, bhi, out)
    if tail:
        out.append((ahi, bhi, tail))


def _anchors(a, b, alo: int, ahi: int, blo: int, bhi: int) -> list[tuple[int, int]]:
    """Lines found exactly once in ``a[alo:ahi]`` and once in ``b[blo:bhi]``, as (i, j) pairs increasing in
    both: the longest such chain, by patience sorting."""
    seen: dict[str, int] = {}
    for j in range(blo, bhi):
        seen[b[j]] = -1 if b[j] in seen else j
    count: dict[str, int] = {}
    for i in range(alo, ahi):
        line = a[i]
        if seen.get(line, -1) >= 0:
            count[line] = count.get(line, 0) + 1
    pairs = [(i, seen[a[i]]) for i in range(alo, ahi) if count.get(a[i]) == 1]
    if not pairs:
        return []
    import bisect

    tops: list[int] = []  # tops[k]: the smallest j ending a chain of k + 1 pairs
    ends: list[int] = []  # the index in pairs of that pair
    back = [-1] * len(pairs)
    for n, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tops, j)
        back[n] = ends[k - 1] if k else -1
        if k == len(tops):
            tops.append(j)
            ends.append(n)
        else:
            tops[k], ends[k] = j, n
    chain = []
    n = ends[-1]
    while n >= 0:
        chain.append(pairs[n])
        n = back[n]
    return chain[::-1]


def _small_gap(a, b, alo: int, ahi: int, blo: int, bhi: int, out: list) -> None:
    import difflib

    matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
    out.extend((alo + i, blo + j, n) for i, j, n in matcher.get_matching_blocks() if n)


def _opcodes(blocks, len_a: int, len_b: int) -> list[tuple[str, int, int, int, int]]:
    codes = []
    i = j = 0
    for ai, bj, n in blocks:
        tag = "replace" if i < ai and j < bj else "delete" if i < ai else "insert" if j < bj else ""
        if tag:
            codes.append((tag, i, ai, j, bj))
        i, j = ai + n, bj + n
        if n:
            codes.append(("equal", ai, i, bj, j))
    return codes


def _hunks(codes: list, context: int) -> Iterator[list]:
    """The changes in groups that share context lines, as ``SequenceMatcher.get_grouped_opcodes``."""
    if not codes:
        return
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)
    group: list = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            yield group
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


def _range(start: int, stop: int) -> str:
    """A hunk header's ``start,length`` (1-based; an empty range names the line before it)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def _marked(sign: str, lines: list[str]) -> Iterator[str]:
    for line in lines:
        if line.endswith(("\n", "\r")):
            yield sign + line
        else:
            yield sign + line + "\n\\ No newline at end of file\n"


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


class Terminated(KeyboardInterrupt):
    """SIGTERM, turned into an interrupt by the command line (a CI timeout, a runner stopping the job): it
    takes the path of Ctrl-C, so the pool is stopped and every file is left untouched or fully written."""


# The signals held while a file is replaced: Ctrl-C, and the polite stop a job runner sends before SIGKILL.
DEFERRED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM for the duration of the block and deliver them afterwards.

    Signal handlers can only be changed from the main thread; elsewhere the block runs as is and
    the except clause of the caller still cleans up.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {signum: signal.signal(signum, lambda signum, frame: received.append(signum))
                for signum in DEFERRED_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if received:
            _deliver(received[0], previous[received[0]])


def _deliver(signum: int, handler) -> None:
    """What the signal would have done had it not been held."""
    if callable(handler):
        handler(signum, None)
    elif handler == signal.SIG_IGN:
        return
    elif signum == signal.SIGINT:
        raise KeyboardInterrupt
    else:
        os.kill(os.getpid(), signum)  # the default action (ending the process), now that the file is whole
