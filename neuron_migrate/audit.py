"""``neuron-migrate audit``: what will break, recompile or fall back on the native backend.

Two sources feed one report. The rewrite engine, run without writing, lists every legacy API
still in the code with the edit that would migrate it (NMxxx ids). The static hazard checks
(NAxxx ids, ``analyzers/static``) list what will recompile, break graphs or fall back. With
``--run`` the runtime analyzer adds what an instrumented run saw; static findings the run
confirmed are marked ``static+runtime``.

A baseline file records the fingerprints of today's findings, so later runs fail only on new
ones (a ratchet for CI).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from neuron_migrate import __version__
from neuron_migrate.analyzers.hazards import SEVERITY_ORDER, selected
from neuron_migrate.config import Config
from neuron_migrate.migrate import parallel
from neuron_migrate.migrate.discover import discover
from neuron_migrate.migrate.runner import display_path
from neuron_migrate.report.model import ERROR, FAILED, SKIPPED, FileResult, Finding, Report

COMMAND = "audit"
BASELINE_VERSION = 1
STATIC_AND_RUNTIME = "static+runtime"


@dataclass
class HazardTask:
    path: str  # as reported
    real: str
    kind: str = "python"


# File kinds that hold Python the hazard checks read: modules, and the code cells of notebooks.
HAZARD_KINDS = ("python", "notebook")


def audit(paths: Sequence[Path | str], config: Config, progress=None) -> Report:
    """Legacy APIs and hazards in ``paths``; nothing is written or executed."""
    started = time.perf_counter()
    cwd = Path.cwd()
    found = discover(paths, config)
    python = [s for s in found.files if s.kind in HAZARD_KINDS]
    tasks = [HazardTask(display_path(s.path, cwd), str(s.real), s.kind) for s in python]
    files = {t.path: FileResult(t.path) for t in tasks}

    cache = HazardCache(config.cache_dir) if config.cache and config.cache_dir is not None else None
    settled, keys = _settle_cheaply(tasks, cache)
    misses = [t for t in tasks if t.path not in settled]
    fresh = parallel.map_in_order(scan_file, misses, config.workers, _no_setup)
    for task, outcome in zip(misses, fresh, strict=True):  # strict: see runner.run
        settled[task.path] = outcome
        if cache is not None and task.path in keys and not outcome.error:
            cache.put(keys[task.path], outcome)
    for done, task in enumerate(tasks, start=1):
        outcome = settled[task.path]
        files[task.path].findings.extend(f for f in outcome.findings if selected(f.rule, config.select, config.ignore))
        if outcome.error:
            files[task.path].status = FAILED
            files[task.path].error = outcome.error
        if progress is not None:
            progress(done, len(tasks), task.path)

    legacy = _legacy_pass(paths, config, found)
    for result in legacy.files:
        target = files.setdefault(result.path, FileResult(result.path))
        target.findings[:0] = [as_audit_finding(f) for f in result.findings]
        if result.status == FAILED and target.status != FAILED:
            target.status, target.error = FAILED, result.error
        elif result.status == SKIPPED and target.status != FAILED:  # a limit, UTF-16: the file was not read
            target.status, target.error = SKIPPED, result.error

    for skipped in found.skipped:
        files[display_path(skipped.path, cwd)] = FileResult(display_path(skipped.path, cwd), SKIPPED, error=skipped.reason)
    for error in found.errors:
        path = display_path(error.path, cwd)
        files[path] = FileResult(path, FAILED, error=error.reason)

    report = Report(tool_version=__version__, command=COMMAND, mode="static", warnings=legacy.warnings)
    report.files = sorted(files.values(), key=lambda r: r.path)
    for result in report.files:
        result.findings.sort(key=lambda f: (f.cell or 0, f.span.line, f.span.column, f.rule))
    report.duration_seconds = time.perf_counter() - started
    return report.complete()


def empty_report() -> Report:
    """The report of a run-only audit, before the runtime findings are merged in."""
    return Report(tool_version=__version__, command=COMMAND, mode="runtime")


@dataclass
class ScanOutcome:
    findings: list[Finding]
    error: str = ""


# Every hazard check needs one of these words in the file, so files without any are settled by a
# byte scan: most of a large repository never touches torch, tokenizers or CUDA.
HAZARD_TRIGGERS = (
    b"torch", b"transformers", b"trl", b"optimum", b"triton", b"cuda", b"nccl", b"NCCL",
    b"padding", b"DataCollator", b"DataLoader", b"SFTConfig", b"AutoModel", b"generation_config",
)


class HazardCache:
    """The hazard checks' findings per file, stored beside the rewrite's outcomes and keyed the same way (the
    tool's code fingerprint, the path the findings carry, the kind and the bytes): a warm audit parses nothing.
    --select / --ignore are applied after the checks, so they are no part of the key."""

    def __init__(self, folder: Path) -> None:
        from neuron_migrate.migrate.cache import FORMAT, code_fingerprint

        self.folder = Path(folder) / FORMAT / "hazards"
        self.salt = f"{code_fingerprint()}\0hazards".encode()

    def key(self, task: HazardTask, data: bytes) -> str:
        digest = hashlib.sha256(self.salt)
        digest.update(f"\0{task.kind}\0{task.path}\0".encode("utf-8", "surrogateescape"))
        digest.update(data)
        return digest.hexdigest()

    def get(self, key: str) -> ScanOutcome | None:
        from neuron_migrate.migrate.cache import _finding_from_json

        try:
            data = json.loads((self.folder / key[:2] / f"{key[2:]}.json").read_bytes())
            return ScanOutcome([_finding_from_json(f) for f in data["findings"]])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, outcome: ScanOutcome) -> None:
        from neuron_migrate.migrate.cache import store

        entry = {"findings": [f.to_dict() for f in outcome.findings]}
        store(self.folder / key[:2] / f"{key[2:]}.json", json.dumps(entry, separators=(",", ":")).encode())


def _settle_cheaply(tasks: Sequence[HazardTask], cache: HazardCache | None):
    """The outcomes a byte scan or the cache gives without parsing, by path, and the cache key of every file the
    checks must read (a file that cannot be read here is left to ``scan_file``, which reports it)."""
    settled: dict[str, ScanOutcome] = {}
    keys: dict[str, str] = {}
    for task in tasks:
        try:
            with open(task.real, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if not any(word in data for word in HAZARD_TRIGGERS):
            settled[task.path] = ScanOutcome([])
            continue
        if cache is None:
            continue
        keys[task.path] = cache.key(task, data)
        hit = cache.get(keys[task.path])
        if hit is not None:
            settled[task.path] = hit
    return settled, keys


def scan_file(task: HazardTask) -> ScanOutcome:
    """Runs in a worker: one file's hazards. A file that does not parse is reported, never raised."""
    from neuron_migrate.analyzers.static import scan_source
    from neuron_migrate.migrate.sources import NUL_MESSAGE, nul_place, wide_encoding

    try:
        with open(task.real, "rb") as fh:
            data = fh.read()
        if not any(word in data for word in HAZARD_TRIGGERS) or wide_encoding(data):
            return ScanOutcome([])  # UTF-16 and UTF-32 files: the legacy pass reports them as not read
        if task.kind == "notebook":
            return _scan_notebook(data, task.path)
        source = data.decode("utf-8-sig")
    except OSError as exc:  # its text would name the file again
        return ScanOutcome([], f"cannot be read: {exc.strerror or exc}")
    except UnicodeDecodeError as exc:
        return ScanOutcome([], f"cannot be read: {exc}")
    place = nul_place(source)
    if place is not None:  # Python's own error would give no place
        return ScanOutcome([], f"{place[0]}:{place[1]}: {NUL_MESSAGE}")
    try:
        return ScanOutcome(scan_source(source, task.path))
    except SyntaxError as exc:
        return ScanOutcome([], f"{exc.lineno}:{(exc.offset or 0)}: does not parse: {exc.msg}")


def _scan_notebook(data: bytes, path: str) -> ScanOutcome:
    """Each code cell on its own, findings numbered by cell. A notebook or cell that cannot be read
    is left to the legacy pass, which reports it (failed, or NM550)."""
    from neuron_migrate.analyzers.static import scan_source
    from neuron_migrate.migrate.notebook import NotebookError, python_cells

    try:
        cells = python_cells(data, path)
    except NotebookError:
        return ScanOutcome([])
    findings = []
    for number, source in cells:
        try:
            findings.extend(replace(f, cell=number) for f in scan_source(source, path))
        except SyntaxError:
            continue
    return ScanOutcome(findings)


def _no_setup() -> None:
    """Workers need nothing prepared: the checks import on first use."""


def _legacy_pass(paths, config: Config, found) -> Report:
    """The rewrite engine in check mode over the files the audit found: every legacy API left, with the edit
    that migrates it."""
    from neuron_migrate.migrate.runner import run

    return run(paths, config, mode="check", diffs=False, found=found)  # the audit shows findings, never a diff


def as_audit_finding(finding: Finding) -> Finding:
    """A rewrite finding seen from the audit: nothing was changed, and legacy code will not run."""
    if finding.applied:
        fix = f"`neuron-migrate rewrite` makes this edit: {finding.after or '(removes it)'}"
        if finding.fix:
            fix += f"; then check: {finding.fix}"
        message = f"legacy API, `neuron-migrate rewrite` fixes it: {finding.message}"
        return replace(finding, applied=False, severity=ERROR, message=message, fix=fix)
    return replace(finding, severity=ERROR, message=f"legacy API: {finding.message}")


# ----- merging a run ------------------------------------------------------------------------------


def merge_runtime(report: Report, runtime: Sequence[Finding]) -> Report:
    """Add runtime findings: one about the same line and rule as a static finding confirms it, the
    others are runtime-only evidence. The merged report is complete again: fingerprints are counted over both."""
    static = {_line_key(f): f for f in report.findings}
    files = {fr.path: fr for fr in report.files}
    for finding in runtime:
        twin = static.get(_line_key(finding))
        if twin is not None:
            twin.evidence = STATIC_AND_RUNTIME
            seen = finding.message if finding.message.startswith("confirmed") else f"confirmed by the run: {finding.message}"
            twin.message = f"{twin.message} ({seen})"
            continue
        files.setdefault(finding.path, FileResult(finding.path)).findings.append(finding)
        static[_line_key(finding)] = finding
    report.files = sorted(files.values(), key=lambda r: r.path)
    return report.complete()


def _line_key(finding: Finding) -> tuple:
    return (finding.rule, finding.path, finding.cell, finding.span.line)


# ----- gates --------------------------------------------------------------------------------------


def exit_code(report: Report, fail_on: str) -> int:
    if report.count(FAILED):
        return 2
    if fail_on == "never":
        return 0
    threshold = SEVERITY_ORDER[fail_on]
    live = (f for f in report.findings if not f.suppressed)
    return 1 if any(SEVERITY_ORDER.get(f.severity, 0) >= threshold for f in live) else 0


def apply_baseline(report: Report, path: Path) -> int:
    """Mark findings recorded in the baseline as suppressed; returns how many were."""
    known = load_baseline(path)
    count = 0
    for finding in report.findings:
        if finding.fingerprint in known and not finding.suppressed:
            finding.suppressed = True
            count += 1
    return count


def load_baseline(path: Path) -> set[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:  # its text would name the file again
        raise BaselineError(f"{path}: cannot read the baseline: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise BaselineError(f"{path}: cannot read the baseline: {exc}") from None
    if not isinstance(data, dict) or data.get("version") != BASELINE_VERSION:
        raise BaselineError(f"{path}: not a neuron-migrate baseline (version {BASELINE_VERSION})")
    return set(data.get("findings", {}))


def write_baseline(report: Report, path: Path) -> int:
    """Record every unsuppressed finding; returns how many."""
    findings = {
        f.fingerprint: {"rule": f.rule, "path": f.path, "line": f.span.line, "code": f.before}
        for f in report.findings
        if not f.suppressed
    }
    data = {"version": BASELINE_VERSION, "tool": f"neuron-migrate {__version__}", "findings": dict(sorted(findings.items()))}
    path.parent.mkdir(parents=True, exist_ok=True)
    from neuron_migrate.migrate.write import atomic_write

    atomic_write(path, (json.dumps(data, indent=2) + "\n").encode("utf-8"))
    return len(findings)


class BaselineError(Exception):
    pass
