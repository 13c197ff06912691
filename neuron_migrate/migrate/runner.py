"""A rewrite run: discover -> prefilter -> cache -> engine (process pool) -> write / diff / check -> Report.

Cheap steps come first so that the expensive one sees as few files as possible: most files of a
project never mention a legacy API and are settled by a byte scan, and files seen before with the
same tool and settings are served from the cache. LibCST and the rules are imported only when a
file actually needs the engine.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from neuron_migrate import __version__
from neuron_migrate.config import Config, size_text
from neuron_migrate.migrate import parallel
from neuron_migrate.migrate.cache import Cache, PlanSummary, related_sources
from neuron_migrate.migrate.discover import Discovery, SourceFile, discover
from neuron_migrate.migrate.prefilter import KindPrefilter, words_by_file_kind
from neuron_migrate.migrate.sources import ADAPTERS, Outcome, not_read_reason, wide_encoding
from neuron_migrate.migrate.write import atomic_write, diffs_computed, unified_diff
from neuron_migrate.report.model import CHANGED, FAILED, SKIPPED, FileResult, Report

if TYPE_CHECKING:
    from neuron_migrate.migrate.engine import RulePlan

MODES = ("write", "diff", "check")
COMMAND = "rewrite"

Progress = Callable[[int, int, str], None]


@dataclass
class Task:
    index: int
    path: str  # as reported
    kind: str
    data: bytes
    ignore: tuple[str, ...] = ()  # rule ids or prefixes ignored in this file beyond the run's (per-file-ignores)


# What the engine costs on a file, measured over the real legacy corpus (2 CPUs, one process): a fixed
# part (parse set-up, metadata, the re-parse check) and a part that grows with the file. Only the
# decision whether a process pool pays rests on it.
ENGINE_SECONDS_PER_FILE = 0.03
ENGINE_SECONDS_PER_BYTE = 40e-6


def engine_seconds(task: Task) -> float:
    return ENGINE_SECONDS_PER_FILE + ENGINE_SECONDS_PER_BYTE * len(task.data)


def run(
    paths: Sequence[Path | str],
    config: Config,
    mode: str = "write",
    progress: Progress | None = None,
    diffs: bool = True,
    found: Discovery | None = None,
) -> Report:
    """Rewrite (``write``), or only report what would change (``diff``, ``check``: nothing is written).

    ``diffs=False`` leaves ``FileResult.diff`` empty: a run whose output shows no diff skips computing them.
    ``found`` is what a caller discovered in ``paths`` already (the audit), so the tree is walked once.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    started = time.perf_counter()
    cwd = Path.cwd()
    found = found if found is not None else discover(paths, config)
    summary = plan_summary(config)
    cache = None
    if _cache_on(config):
        cache = Cache.for_run(config.cache_dir, config.fingerprint(), summary.ids, summary.triggers)
    results = _Results(found.files, [display_path(s.path, cwd) for s in found.files], mode, cache, progress)
    results.diffs = diffs
    results.extra_ignores = PerFileIgnores(config)
    results.max_size = config.max_file_size
    results.write_read_only = config.write_read_only

    tasks = results.settle_cheaply(KindPrefilter(summary.triggers))
    if tasks:
        init_args = (tuple(config.select), tuple(config.ignore), config.no_comments, diffs, config.keep_dual_stack,
                     config.migrate_from == "cuda")
        outcomes = parallel.map_in_order(process, tasks, config.workers, init_worker, init_args, engine_seconds,
                                         time_limit=config.max_file_seconds or None, lost=LostOutcome(config))
        try:
            # strict: after the last task the pool is asked for one more result, which lets it shut down
            # cleanly (a pool left running at exit races with the interpreter's own clean-up on 3.11).
            upcoming = [task.path for task in tasks[1:]] + [""]
            for task, outcome, following in zip(tasks, outcomes, upcoming, strict=True):
                results.settle(task, outcome, following)
        finally:
            # On an interrupt (or an error in a progress callback) this cancels the pending work now,
            # rather than when the generator happens to be collected after every file was processed.
            outcomes.close()

    files = results.files()
    for skipped in found.skipped:
        files.append(FileResult(display_path(skipped.path, cwd), SKIPPED, error=skipped.reason))
    for error in found.errors:
        path = display_path(error.path, cwd)
        files.append(FileResult(path, FAILED, error=error.reason))
    report = Report(tool_version=__version__, command=COMMAND, mode=mode, rules=summary.rules)
    report.files = sorted(files, key=lambda r: r.path)
    report.warnings = results.warnings
    report.duration_seconds = time.perf_counter() - started
    return report.complete()


class _Results:
    """The file results of a run, in discovery order, filled in as each file is settled."""

    def __init__(self, sources: list[SourceFile], paths: list[str], mode: str, cache: Cache | None, progress):
        self.sources = sources
        self.paths = paths
        self.mode = mode
        self.cache = cache
        self.progress = progress
        self.results: list[FileResult | None] = [None] * len(sources)
        self.keys: dict[int, str] = {}
        self.done = 0
        self.extra_ignores: Callable[[SourceFile], tuple[str, ...]] = lambda source: ()
        self.diffs = True  # whether outcomes carry their diff (a cached entry made without one cannot serve)
        self.warnings: list[str] = []
        self.max_size = 0  # bytes of code a file may hold to go to the engine; 0: no limit
        self.write_read_only = False

    def settle_cheaply(self, prefilter: KindPrefilter) -> list[Task]:
        """Settle every file a byte scan or the cache can; return the ones that need the engine."""
        tasks = []
        for index, (source, path) in enumerate(zip(self.sources, self.paths)):
            try:
                data = _read(source)
            except OSError as exc:
                self._finish(index, FileResult(path, FAILED, error=f"cannot be read: {exc.strerror or exc}"))
                continue
            wide = wide_encoding(data)
            if wide is not None:
                self._finish(index, FileResult(path, SKIPPED, error=not_read_reason(wide)))
                continue
            if b"neuron-migrate: ignore[" in data:
                self.warnings.extend(_unknown_ignores(path, data))
            if not prefilter(source.kind, data):
                self._finish(index, FileResult(path))
                continue
            size = code_size(source.kind, data) if self.max_size and len(data) > self.max_size else 0
            if size > self.max_size:
                self._finish(index, FileResult(path, SKIPPED, error=too_large(size, self.max_size)))
                continue
            task = Task(index, path, source.kind, data, self.extra_ignores(source))
            if self.cache is not None:
                related = related_sources(source.kind, str(source.real), data)
                self.keys[index] = self.cache.key(path, data, related, source.kind)
                hit = self.cache.get(self.keys[index], need_diff=self.diffs)
                if hit is not None:
                    self._finish(index, self._apply(task, hit, cached=True))
                    continue
            tasks.append(task)
        return tasks

    def settle(self, task: Task, outcome: Outcome, following: str = "") -> None:
        """Record the task's outcome; ``following`` is the file whose result comes next (the one being
        worked on now, since results arrive in order), which the progress bar shows."""
        if self.cache is not None:
            self.cache.put(self.keys[task.index], outcome, with_diff=self.diffs)
        self._finish(task.index, self._apply(task, outcome, cached=False), following)

    def files(self) -> list[FileResult]:
        return [r for r in self.results if r is not None]

    def _finish(self, index: int, result: FileResult, following: str | None = None) -> None:
        self.results[index] = result
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, len(self.sources), result.path if following is None else following)

    def _apply(self, task: Task, outcome: Outcome, cached: bool) -> FileResult:
        """The file's result; in ``write`` mode a change is also written."""
        result = FileResult(
            task.path, outcome.status, findings=outcome.findings, diff=outcome.diff, error=outcome.error, cached=cached
        )
        if outcome.status != CHANGED or outcome.output is None:
            return result
        if self.mode == "diff" and task.kind == "notebook":
            result.patch = unified_diff(task.data.decode("utf-8"), outcome.output.decode("utf-8"), task.path)
        if self.mode == "write":
            if not self.write_read_only and read_only(self.sources[task.index].real):
                return FileResult(task.path, SKIPPED, error=READ_ONLY)
            try:
                atomic_write(self.sources[task.index].real, outcome.output)
            except OSError as exc:
                result.status = FAILED
                result.error = f"cannot be written, left unchanged: {exc.strerror or exc}"
        return result


READ_ONLY = ("read-only (no write permission): left unchanged, as ruff and black do; --write-read-only "
             "(write-read-only = true in [tool.neuron-migrate]) rewrites it")


def read_only(path: Path) -> bool:
    """No write bit at all, or none this user has. The rewrite replaces a file through its folder (an atomic
    rename), which would succeed anyway, even for root: the file's own permission is what the user set."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False  # the write reports it
    return not mode & 0o222 or not os.access(path, os.W_OK)


def _unknown_ignores(path: str, data: bytes) -> list[str]:
    """Ignore comments that name an id no rule or hazard has, as ruff warns about unknown codes."""
    from neuron_migrate.ruleapi.ids import close_ids, known_ids
    from neuron_migrate.suppress import unknown_ids

    out = []
    for line, rule_id in unknown_ids(data.decode("utf-8", "replace"), set(known_ids())):
        near = close_ids(rule_id, limit=3)
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        out.append(f"{path}:{line}: `neuron-migrate: ignore[{rule_id}]` names no known rule{hint}; it silences nothing")
    return out


def display_path(path: Path, cwd: Path) -> str:
    """Relative to the working directory when the file is below it; always forward slashes."""
    try:
        return path.relative_to(cwd).as_posix()
    except ValueError:
        return path.as_posix()


def _cache_on(config: Config) -> bool:
    return config.cache and config.cache_dir is not None


def _read(source: SourceFile) -> bytes:
    with open(source.real, "rb") as fh:
        return fh.read()


# ----- the rule plan ------------------------------------------------------------------------------
# The plan of the current process; workers build theirs once in init_worker (a forked worker
# inherits the parent's, which is then simply reused).
_plans: dict[tuple, RulePlan] = {}
# the run's (select, ignore, keep_dual_stack, from_cuda)
_run_args: tuple[tuple[str, ...], tuple[str, ...], bool, bool] | None = None
_no_comments = False
_diffs = True  # whether the run's outcomes carry a diff


def rule_plan(
    select: tuple[str, ...], ignore: tuple[str, ...], keep_dual_stack: bool = False, from_cuda: bool = False
) -> RulePlan:
    key = (select, ignore, keep_dual_stack, from_cuda)
    plan = _plans.get(key)
    if plan is None:
        from neuron_migrate.migrate.engine import RulePlan

        plan = _plans[key] = RulePlan.build(select, ignore, keep_dual_stack=keep_dual_stack, from_cuda=from_cuda)
    return plan


class PerFileIgnores:
    """``per-file-ignores``: the rule ids a file's path adds to the run's ``ignore``."""

    def __init__(self, config: Config) -> None:
        from neuron_migrate.migrate.discover import path_matcher

        self.root = Path(os.path.abspath(config.root))
        self.patterns = [(path_matcher([pattern]), ids) for pattern, ids in config.per_file_ignores]

    def __call__(self, source: SourceFile) -> tuple[str, ...]:
        if not self.patterns:
            return ()
        try:
            relative = Path(os.path.abspath(source.path)).relative_to(self.root).as_posix()
        except ValueError:
            return ()
        return tuple(rule for matcher, ids in self.patterns if matcher.verdict(relative, False) for rule in ids)


def plan_summary(config: Config) -> PlanSummary:
    """Rule ids, trigger words and metadata, from the cache when possible so that a run over clean
    or cached files does not import the rules (and with them LibCST) at all."""
    select, ignore = tuple(config.select), tuple(config.ignore)
    from_cuda = config.migrate_from == "cuda"
    key = Cache.plan_key(select, ignore, from_cuda) if _cache_on(config) else None
    if key is not None:
        summary = Cache.load_plan(config.cache_dir, key)
        if summary is not None:
            return summary
    from neuron_migrate.migrate.engine import TODO_MARKER_TRIGGER
    from neuron_migrate.ruleapi import rule_dict

    plan = rule_plan(select, ignore, from_cuda=from_cuda)
    rules = sorted(plan.index.rules, key=lambda r: r.meta.id)
    def kinds(rule) -> tuple[str, ...]:
        return (rule.meta.kind, *rule.also_edits)

    summary = PlanSummary(
        ids=tuple(r.meta.id for r in rules),
        # A file whose legacy code was all edited away by hand may still hold TODO markers to drop.
        triggers=words_by_file_kind(((kinds(r), r.meta.triggers) for r in rules), always=(TODO_MARKER_TRIGGER,)),
        rules={r.meta.id: rule_dict(r) for r in rules},
    )
    if key is not None:
        Cache.store_plan(config.cache_dir, key, summary)
    return summary


def init_worker(
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    no_comments: bool,
    diffs: bool = True,
    keep_dual_stack: bool = False,
    from_cuda: bool = False,
) -> None:
    global _no_comments, _run_args, _diffs
    rule_plan(select, ignore, keep_dual_stack, from_cuda)
    _run_args = (select, ignore, keep_dual_stack, from_cuda)
    _no_comments = no_comments
    _diffs = diffs


class LostOutcome:
    """The outcome of a file the run gave up on: past the time limit, or its worker died (never cached)."""

    def __init__(self, config: Config) -> None:
        self.seconds = config.max_file_seconds

    def __call__(self, task: Task, why: str) -> Outcome:
        if why == parallel.TIMED_OUT:
            return Outcome(SKIPPED, error=f"took more than {self.seconds:g} s, the per-file time "
                                          "limit (--max-file-seconds, or max-file-seconds in [tool.neuron-migrate])")
        return Outcome(FAILED, error="a worker process died while rewriting this file (out of "
                                     "memory?); file left unchanged; rerun with --jobs 1 to see why")


def too_large(size: int, limit: int) -> str:
    return (f"{size_text(size)} of code, over the per-file size limit of {size_text(limit)} "
            "(--max-file-size, or max-file-size in [tool.neuron-migrate])")


def code_size(kind: str, data: bytes) -> int:
    """The bytes of code the engine would read: a notebook's code cells (its outputs, often images, are
    never parsed), the whole file otherwise."""
    if kind != "notebook":
        return len(data)
    import json

    try:
        cells = json.loads(data).get("cells", [])
        return sum(len("".join(cell.get("source", "")).encode()) for cell in cells if cell.get("cell_type") == "code")
    except (ValueError, AttributeError, TypeError):
        return len(data)  # not a notebook the adapter can read either; it reports why


def process(task: Task) -> Outcome:
    """Runs in a worker (or inline): one file's bytes -> its outcome. Never raises for a bad file."""
    assert _run_args is not None, "init_worker() must run first"
    select, ignore, keep_dual_stack, from_cuda = _run_args
    plan = rule_plan(select, (*ignore, *task.ignore) if task.ignore else ignore, keep_dual_stack, from_cuda)
    with diffs_computed(_diffs):
        return ADAPTERS[task.kind](task.data, task.path, plan, _no_comments)
