"""Spread the files that need the engine over worker processes; results come back in input order.

A pool costs a fork per worker, a first file in each worker that runs with cold caches, and a round
trip per chunk, so a run whose estimated work is small stays in this process. With the ``fork`` start
method the initializer runs in this process before the pool starts, so that the workers inherit what
it prepared (the rule plan, LibCST) instead of each importing and building it again.
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

# Without a cost estimate: below this many files the pool's start-up costs more than it saves.
MIN_POOL_TASKS = 4
# With one: the estimated seconds of work, in this process, below which a pool does not pay. Two
# workers save half the work and cost about 0.15 s (forks, cold caches, results sent back).
POOL_PAYS_SECONDS = 0.4


def map_in_order(
    fn: Callable[[T], R],
    tasks: Sequence[T],
    jobs: int,
    initializer: Callable[..., Any],
    initargs: tuple = (),
    cost: Callable[[T], float] | None = None,
) -> Iterator[R]:
    """``fn`` over ``tasks``, yielding results in the order of ``tasks``. ``initializer(*initargs)``
    runs once in every process that calls ``fn`` (this one too, when there is no pool). ``cost``
    estimates the seconds ``fn`` takes on a task, which decides whether a pool pays."""
    if not pool_pays(tasks, jobs, cost):
        initializer(*initargs)
        for task in tasks:
            yield fn(task)
        return
    # Imported here: multiprocessing is a noticeable share of start-up for runs that never need it.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if multiprocessing.get_start_method() == "fork":
        initializer(*initargs)

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


def pool_pays(tasks: Sequence[T], jobs: int, cost: Callable[[T], float] | None = None) -> bool:
    if jobs <= 1 or len(tasks) < 2:
        return False
    if cost is None:
        return len(tasks) >= MIN_POOL_TASKS
    return sum(cost(task) for task in tasks) >= POOL_PAYS_SECONDS


class WorkerDied(Exception):
    """A worker process ended abruptly (killed, out of memory, a crash in native code)."""


def _start_worker(initializer: Callable[..., Any], initargs: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    initializer(*initargs)
