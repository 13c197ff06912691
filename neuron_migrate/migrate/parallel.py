"""Spread the files that need the engine over worker processes; results come back in input order.

A pool costs a fork per worker, a first file in each worker that runs with cold caches, and a round
trip per file, so a run whose estimated work is small stays in this process. With the ``fork`` start
method the initializer runs in this process before the pool starts, so that the workers inherit what
it prepared (the rule plan, LibCST) instead of each importing and building it again.

The pool is a small one of our own rather than ``concurrent.futures``: it must be able to end one
worker that is stuck on a file (past the per-file time limit) and go on with a fresh one, and
workers must never outlive this process. Each worker gets one task at a time over its own pipe, so
the parent always knows which file a worker is on and since when.

Workers end with their parent whatever ends it: on Linux the kernel kills them when it dies
(``PR_SET_PDEATHSIG``, even on SIGKILL from the OOM killer), and a thread in each worker that watches
the parent's pid does the same elsewhere. Workers ignore SIGINT: Ctrl-C reaches the whole process
group, and it is the parent that decides what happens (it stops the workers and leaves every file
either untouched or fully written, since only the parent writes).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

# Without a cost estimate: below this many files the pool's start-up costs more than it saves.
MIN_POOL_TASKS = 4
# With one: the estimated seconds of work, in this process, below which a pool does not pay. Two
# workers save half the work and cost about 0.15 s (forks, cold caches, results sent back).
POOL_PAYS_SECONDS = 0.4

# With a time limit, a task estimated to take this long runs in a worker even when a pool would not pay
# otherwise: native code (LibCST's parser takes half a minute on a 2 MB module) cannot be interrupted
# in this process, by the time limit or by Ctrl-C, but a worker can always be killed.
SUPERVISE_SECONDS = 1.0

# Why a task has no result of its own (see ``lost`` in map_in_order).
TIMED_OUT = "timed out"
DIED = "died"

# How often a worker's watchdog thread checks that its parent is still there.
PARENT_POLL_SECONDS = 0.5
# linux/prctl.h
PR_SET_PDEATHSIG = 1


class WorkerDied(Exception):
    """A worker process ended abruptly (killed, out of memory, a crash in native code)."""


def map_in_order(
    fn: Callable[[T], R],
    tasks: Sequence[T],
    jobs: int,
    initializer: Callable[..., Any],
    initargs: tuple = (),
    cost: Callable[[T], float] | None = None,
    time_limit: float | None = None,
    lost: Callable[[T, str], R] | None = None,
) -> Iterator[R]:
    """``fn`` over ``tasks``, yielding results in the order of ``tasks``. ``initializer(*initargs)``
    runs once in every process that calls ``fn`` (this one too, when there is no pool). ``cost``
    estimates the seconds ``fn`` takes on a task, which decides whether a pool pays.

    ``lost(task, why)`` stands in for the result of a task that ran past ``time_limit`` seconds
    (``why`` is TIMED_OUT) or whose worker died (DIED); without it a dead worker raises WorkerDied and
    no time limit applies."""
    limit = time_limit if time_limit and lost is not None else None
    if not pool_pays(tasks, jobs, cost) and not (limit is not None and long_task(tasks, cost)):
        initializer(*initargs)
        for task in tasks:
            yield _in_process(fn, task, limit, lost)
        return
    yield from _Pool(fn, initializer, initargs, max(1, min(jobs, len(tasks))), limit, lost).map(tasks)


def pool_pays(tasks: Sequence[T], jobs: int, cost: Callable[[T], float] | None = None) -> bool:
    if jobs <= 1 or len(tasks) < 2:
        return False
    if cost is None:
        return len(tasks) >= MIN_POOL_TASKS
    return sum(cost(task) for task in tasks) >= POOL_PAYS_SECONDS


def long_task(tasks: Sequence[T], cost: Callable[[T], float] | None) -> bool:
    return cost is not None and any(cost(task) >= SUPERVISE_SECONDS for task in tasks)


# ----- in this process ---------------------------------------------------------------------------------
class _Expired(BaseException):
    """Raised by the alarm inside a task that ran past its time limit. A BaseException, so that the
    ``except Exception`` that turns a rule's bug into one file's error does not swallow it."""


def _in_process(fn: Callable[[T], R], task: T, limit: float | None, lost: Callable[[T, str], R] | None) -> R:
    # The alarm interrupts Python code only; a task long enough to spend seconds in native code ran in a worker.
    if limit is None or lost is None:
        return fn(task)
    try:
        with _alarm(limit):
            return fn(task)
    except _Expired:
        return lost(task, TIMED_OUT)


@contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    """Raise _Expired in this thread after ``seconds``. Signals reach the main thread only, and not
    every platform has SIGALRM: elsewhere the block runs without a limit."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise _Expired

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ----- the pool ------------------------------------------------------------------------------------------
class _Worker:
    def __init__(self, context, target, args) -> None:
        parent_end, child_end = context.Pipe()
        # daemon: a pool left behind by an unexpected error is still ended when this interpreter exits.
        self.process = context.Process(target=target, args=(child_end, *args), daemon=True)
        self.process.start()
        child_end.close()
        self.conn = parent_end
        self.index: int | None = None  # the task it is working on
        self.started = 0.0

    def give(self, index: int, task) -> None:
        self.conn.send((index, task))
        self.index, self.started = index, time.monotonic()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()

    def stop(self) -> None:
        """Ask an idle worker to end, as the last message of its pipe."""
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.process.join(timeout=5)
        self.kill()


class _Pool:
    def __init__(self, fn, initializer, initargs: tuple, size: int, limit: float | None, lost) -> None:
        import multiprocessing

        self.context = multiprocessing.get_context()
        method = self.context.get_start_method()
        if method == "fork":
            initializer(*initargs)  # the workers inherit what it prepared
        # With forkserver a worker's parent is the server process, which ends when this one does: 0 says so.
        self.args = (fn, initializer, initargs, os.getpid() if method in ("fork", "spawn") else 0)
        self.size = size
        self.limit = limit
        self.lost = lost
        self.workers: list[_Worker] = []

    def map(self, tasks: Sequence) -> Iterator:
        results: dict[int, Any] = {}
        waiting = list(range(len(tasks) - 1, -1, -1))  # a stack: the next task is at the end
        done = 0
        try:
            self.workers = [self._start() for _ in range(self.size)]
            while done < len(tasks):
                for worker in self.workers:
                    if worker.index is None and waiting:
                        index = waiting.pop()
                        worker.give(index, tasks[index])
                # Results are handed on only when every idle worker has its next file: the caller's work
                # on them (writing files) then overlaps the workers'.
                while done in results:
                    yield results.pop(done)
                    done += 1
                if done < len(tasks):
                    self._collect(tasks, results)
        except BaseException:
            # Also reached when the consumer stops early (GeneratorExit) or is interrupted. The workers only
            # compute (the parent writes), so they are killed at once rather than left to finish their file.
            self._kill_all()
            raise
        for worker in self.workers:
            worker.stop()

    def _start(self) -> _Worker:
        return _Worker(self.context, _work, self.args)

    def _collect(self, tasks: Sequence, results: dict[int, Any]) -> None:
        """Wait for the next result, a worker's death or a time limit, and record what happened."""
        from multiprocessing.connection import wait

        busy = [w for w in self.workers if w.index is not None]
        handles = [w.conn for w in busy] + [w.process.sentinel for w in busy]
        wait(handles, timeout=self._next_deadline(busy))
        now = time.monotonic()
        for position, worker in enumerate(self.workers):
            if worker.index is None:
                continue
            index = worker.index
            if worker.conn.poll():
                try:
                    ok, value = worker.conn.recv()
                except (EOFError, OSError):
                    results[index] = self._replace(position, tasks[index], DIED)
                    continue
                if not ok:
                    raise value
                results[index] = value
                worker.index = None
            elif not worker.process.is_alive():
                results[index] = self._replace(position, tasks[index], DIED)
            elif self.limit is not None and now - worker.started >= self.limit:
                results[index] = self._replace(position, tasks[index], TIMED_OUT)

    def _next_deadline(self, busy: list[_Worker]) -> float | None:
        if self.limit is None or not busy:
            return None
        return max(0.0, min(w.started for w in busy) + self.limit - time.monotonic())

    def _replace(self, position: int, task, why: str):
        """The stand-in result of the worker's task; the worker is ended and a fresh one takes its place."""
        self.workers[position].kill()
        if self.lost is None:
            raise WorkerDied(f"a worker process ended abruptly (exit code {self.workers[position].process.exitcode})")
        self.workers[position] = self._start()
        return self.lost(task, why)

    def _kill_all(self) -> None:
        for worker in self.workers:
            if worker.process.is_alive():
                worker.process.kill()
        for worker in self.workers:
            worker.kill()


# ----- in a worker ---------------------------------------------------------------------------------------
def _work(conn, fn, initializer, initargs: tuple, parent: int) -> None:
    """A worker's life: tasks in, results out, until the parent says stop or is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A forked worker inherits the parent's handler, which would turn SIGTERM into an interrupt here.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent(parent)
    initializer(*initargs)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        index, task = message
        try:
            reply = (True, fn(task))
        except Exception as exc:  # noqa: BLE001 - raised again in the parent, as concurrent.futures does
            reply = (False, _sendable(exc))
        conn.send(reply)


def _sendable(exc: Exception) -> Exception:
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - any exception that does not survive pickling
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def die_with_parent(parent: int) -> None:
    """End this process when ``parent`` (0: the process that started this one) ends. Linux sends SIGKILL the
    moment the parent (strictly, the parent thread that started this process) exits; the watchdog thread is
    the fallback elsewhere."""
    if not parent:
        parent = os.getppid()
        if parent == 1:  # already gone: adopted by init
            os._exit(1)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    # The parent may have ended before the request above took effect: then nothing would kill us.
    if os.getppid() != parent:
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), name="neuron-migrate-parent-watch", daemon=True).start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_SECONDS)
    os._exit(1)
