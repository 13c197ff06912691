"""Spread the files that need the engine over worker processes; results come back in input order.

A pool costs a fork per worker and a round trip per chunk, so small runs stay in this process.
Workers ignore SIGINT: Ctrl-C reaches the whole process group, and it is the parent that decides
what happens (it cancels the pending work and leaves every file either untouched or fully
written, since only the parent writes).
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

# Below this many files the pool's start-up costs more than it saves.
MIN_POOL_TASKS = 4


def map_in_order(
    fn: Callable[[T], R],
    tasks: Sequence[T],
    jobs: int,
    initializer: Callable[..., Any],
    initargs: tuple = (),
) -> Iterator[R]:
    """``fn`` over ``tasks``, yielding results in the order of ``tasks``. ``initializer(*initargs)``
    runs once in every process that calls ``fn`` (this one too, when there is no pool)."""
    if jobs <= 1 or len(tasks) < MIN_POOL_TASKS:
        initializer(*initargs)
        for task in tasks:
            yield fn(task)
        return
    # Imported here: multiprocessing is a noticeable share of start-up for runs that never need it.
    from concurrent.futures import ProcessPoolExecutor

    workers = min(jobs, len(tasks))
    # Files take tens of milliseconds each, so a round trip per few files costs little; small
    # chunks keep the workers evenly loaded and let an interrupt cancel all but a few files.
    chunksize = max(1, min(4, len(tasks) // (workers * 16)))
    from concurrent.futures.process import BrokenProcessPool

    executor = ProcessPoolExecutor(workers, initializer=_start_worker, initargs=(initializer, initargs))
    try:
        yield from executor.map(fn, tasks, chunksize=chunksize)
    except BrokenProcessPool as exc:
        executor.shutdown(wait=False, cancel_futures=True)
        raise WorkerDied(str(exc)) from exc
    except BaseException:
        # Also reached when the consumer stops early (GeneratorExit) or is interrupted. The workers only
        # compute (the parent writes), so they are stopped at once rather than left to finish their chunk:
        # waiting for them is what made Ctrl-C take seconds, and a second Ctrl-C during that wait hang.
        _stop_workers(executor)
        executor.shutdown(wait=True)
        raise
    executor.shutdown(wait=True)


def _stop_workers(executor) -> None:
    import threading
    from concurrent.futures import InvalidStateError

    # With its workers gone the pool marks every pending future broken, and on Python 3.11 its manager thread
    # fails doing so for the futures the interrupted map() had cancelled: that error is expected here.
    previous = threading.excepthook

    def quiet(args) -> None:
        if not isinstance(args.exc_value, InvalidStateError):
            previous(args)

    threading.excepthook = quiet
    for process in list(getattr(executor, "_processes", {}).values()):
        if process.is_alive():
            process.terminate()
    for process in list(getattr(executor, "_processes", {}).values()):
        process.join(timeout=2)


class WorkerDied(Exception):
    """A worker process ended abruptly (killed, out of memory, a crash in native code)."""


def _start_worker(initializer: Callable[..., Any], initargs: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    initializer(*initargs)
