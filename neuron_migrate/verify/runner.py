"""``verify()``: run both programs under the recorder, compare them, explain the first divergence."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from neuron_migrate.report.verification import DIFFERENT, EQUAL, FAILED, Edit, SideRun, Verification
from neuron_migrate.verify import causes, original, program, revision
from neuron_migrate.verify.compare import compare
from neuron_migrate.verify.records import Record, global_view, load
from neuron_migrate.verify.sides import (NUMERIC_VARS, Finished, Options, Side, legacy_side, migrated_side, recorded,
                                         run_both)

TAIL_LINES = 25
NETWORK_ERRORS = ("HF_HUB_OFFLINE", "offline mode", "OfflineModeIsEnabled", "LocalEntryNotFoundError",
                  "couldn't connect to", "network access refused")
ADDRESS = re.compile(r"https?://([A-Za-z0-9.-]+\.[A-Za-z]{2,})")
MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([^']+)'")
RANK_PREFIX = re.compile(r"^\[(?:rank|default)\d+\]:\s?", re.M)  # torchrun's prefix on each rank's lines
EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\b.*)$", re.M)


class VerifyError(Exception):
    """A usage problem found before anything ran (a missing script, an interpreter that is not there)."""


def verify(legacy: Path, migrated: Path, args: list[str], *, legacy_python: str | None = None,
           script: str | None = None, options: Options | None = None, keep: Path | None = None) -> Verification:
    """Run ``legacy`` (a script, a project folder, or ``git:REV``: ``migrated`` at that revision) and
    ``migrated`` with ``args``, and compare them. ``keep`` keeps both sides' records and output there."""
    options = options or Options()
    python = _interpreter(legacy_python)
    if importlib.util.find_spec("torch") is None:
        raise VerifyError("verify runs the migrated side with torch: "
                          "pip install 'neuron-migrate[runtime]' torch==2.13.0")
    with contextlib.ExitStack() as stack:
        # absolute: each side runs in its own folder and writes its record there
        work = keep.resolve() if keep is not None else stack.enter_context(_temporary("neuron-migrate-verify-"))
        exported = None
        if revision.is_revision(str(legacy)):
            exported = stack.enter_context(_temporary("neuron-migrate-legacy-"))
        target = _exported(str(legacy), migrated, exported) if exported is not None else legacy
        script_path = entry(target, script)
        kind = original.kind_of(target, script_path, options.original)
        sides = [legacy_side(python, script_path, args, work, options, kind),
                 migrated_side(entry(migrated, script), args, work, options, _real_device())]
        if options.original_records is not None:
            kept = _kept_records(options.original_records)
            finished = [recorded(sides[0], kept), *run_both(sides[1:], options.timeout)]
        else:
            finished = run_both(sides, options.timeout)
        result = _result(finished, target, migrated, options)
        if kind == original.CUDA and result.legacy.error.startswith(NEEDS_GPU):
            there, here = original.gpu_host_commands(str(legacy), str(migrated), args, _portable(options, script))
            result.notes += [f"record the original on a machine with a GPU: {there}",
                             f"then compare its records here: {here}"]
        if exported is not None:
            _name_revision(result, exported, str(legacy))
        return result


NEEDS_GPU = "needs a GPU"


def _kept_records(folder: Path) -> Path:
    """The folder that holds the original's ``rank*.jsonl``: the one given, or its ``legacy`` folder (the folder
    --keep-records named on the other machine)."""
    for candidate in (folder, folder / "legacy"):
        if any(candidate.glob("rank*.jsonl")):
            return candidate.resolve()
    raise VerifyError(f"--original-records {folder}: no records (rank*.jsonl) there or in {folder / 'legacy'}")


def _portable(options: Options, script: str | None) -> list[str]:
    """The options that decide what the original records, for the same run on another machine."""
    words = [] if options.steps == 10 else ["--steps", str(options.steps)]
    words += [] if options.seed == 0 else ["--seed", str(options.seed)]
    words += [] if options.nproc == 1 else ["--nproc", str(options.nproc)]
    words += [] if options.legacy_nproc is None else ["--legacy-nproc", str(options.legacy_nproc)]
    words += [] if not options.no_dropout else ["--no-dropout"]
    words += [] if options.launcher else ["--no-launcher"]
    words += ["--legacy-args", shlex.join(options.legacy_args)] if options.legacy_args else []
    return [*words, *(["--script", script] if script else [])]


@contextlib.contextmanager
def _temporary(prefix: str):
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _name_revision(result: Verification, exported: Path, target: str) -> None:
    """Paths inside the export are shown as ``git:REV:path``: the export is gone once verify returns."""
    def named(path: str) -> str:
        inside = Path(path)
        if inside.is_absolute() and inside.is_relative_to(exported):
            return f"{target}:{inside.relative_to(exported)}"
        return path

    result.legacy.script, result.legacy.cwd = named(result.legacy.script), named(result.legacy.cwd)
    result.legacy.command = [named(word) for word in result.legacy.command]
    for edit in result.divergence.edits if result.divergence else []:
        edit.path = named(edit.path)


def _exported(target: str, migrated: Path, into: Path) -> Path:
    if not migrated.exists():
        raise VerifyError(f"no such file or folder: {migrated}")
    try:
        return revision.export(target, migrated, into)
    except revision.RevisionError as exc:
        raise VerifyError(str(exc)) from None


def _real_device() -> bool:
    # torch-neuronx installed here means a Trainium machine: the migrated side runs on the device itself
    return importlib.util.find_spec("torch_neuronx") is not None


def entry(target: Path, script: str | None) -> Path:
    """The script to run: the file given, or in a folder the one ``--script`` names or the only one with a
    ``__main__`` guard."""
    if not target.exists():
        raise VerifyError(f"no such file or folder: {target}")
    if target.is_file():
        return target.resolve()
    if script:
        found = target / script
        if not found.is_file():
            raise VerifyError(f"{found}: no such script (from --script)")
        return found.resolve()
    mains = [p for p in sorted(target.glob("*.py")) if "__main__" in p.read_text(encoding="utf-8", errors="replace")]
    if len(mains) != 1:
        names = ", ".join(p.name for p in mains) or "none"
        raise VerifyError(f"{target}: name the entry script with --script (scripts with a __main__ guard: {names})")
    return mains[0].resolve()


def _interpreter(python: str | None) -> str:
    """The legacy interpreter as an absolute path: the side runs in its script's folder, where a path relative to
    here names nothing. Not resolved: a venv's ``bin/python`` is a link whose target would lose the venv."""
    if python is None:
        return sys.executable
    found = shutil.which(python) if os.sep not in python else python
    if found is None or not Path(found).is_file():
        raise VerifyError(f"--legacy-python {python}: no such interpreter")
    if not os.access(found, os.X_OK):
        raise VerifyError(f"--legacy-python {python}: not executable")
    return os.path.abspath(found)


def _result(finished: list[Finished], legacy: Path, migrated: Path, options: Options) -> Verification:
    records = [load(done.side.records) for done in finished]
    runs = [_side_run(done, record, options) for done, record in zip(finished, records)]
    result = Verification(runs[0], runs[1], EQUAL, options.rtol, options.steps, options.nproc)
    failed = any(run.error for run in runs)
    result.notes += [f"the {done.side.name} side was stopped when the other one failed"
                     for done in finished if done.cancelled]
    pairs = _pairs(records, result)
    if pairs:
        # a side that failed still shows the steps both finished, and whether they had parted by then
        _compare_ranks(result, pairs, legacy, migrated, [done.side for done in finished], complete_only=failed)
    if failed:
        result.outcome = FAILED
        return result
    if not sum(result.compared.values()):
        result.outcome = FAILED
        # the side that recorded nothing failed to do its part; when both did, the program does nothing verify sees
        silent = [run for run, record in zip(runs, records) if not _computed(record)]
        for run in silent or runs[:1]:
            run.error = ("nothing to compare: the program made no optimizer step, called no model and read no "
                         "batch")
        return result
    _add_notes(result, records)
    _check_ranks(result, records)
    _check_device(result, records[1], finished[1].side, migrated)
    return result


def _computed(record: dict[int, Record]) -> bool:
    """Whether a side recorded anything it computed (a tensor or a loss), beyond its start and settings."""
    return any(event.get("tensors") or event["kind"] == "loss" for rank in record.values() for event in rank.events)


def _check_ranks(result: Verification, records: list[dict[int, Record]]) -> None:
    """Migrated ranks that start alike and part after a step did not average their gradients. It decides when
    the sides agreed, or parted no earlier: a legacy run whose ranks ran alone (torch_xla's CPU device) parts
    the same way and cannot show it."""
    ours, theirs = records
    if len(theirs) < 2:
        return
    divergence = causes.unaveraged_ranks(theirs, result.rtol)
    if divergence is None:
        result.notes.append(f"the {len(theirs)} migrated ranks were compared with each other: they agree after "
                            "every step, or start apart (a sharded model) and are not compared")
        return
    if result.divergence is not None and result.divergence.step <= divergence.step:
        result.notes.append(f"the migrated ranks also part from each other after step {divergence.step}: "
                            "they do not average their gradients")
        return
    if result.divergence is not None:
        result.notes.append(f"the values parted from the legacy side too, first at step {result.divergence.step} "
                            f"({result.divergence.what})")
    if len(ours) > 1 and causes.unaveraged_ranks(ours, result.rtol) is not None:
        result.notes.append("the legacy ranks part from each other as well: on torch_xla's CPU device each rank "
                            "ran alone, so the legacy side cannot show whether the program averaged gradients; "
                            "on the device xm.optimizer_step (or its all_reduce) averaged them")
    result.outcome, result.divergence = DIFFERENT, divergence


def _check_device(result: Verification, migrated: dict[int, Record], side: Side, target: Path) -> None:
    """A migrated program that computed nothing on the device is not vouched for, whatever its values."""
    divergence = causes.on_cpu(list(migrated.values()), target if target.is_dir() else side.script.parent,
                               side.script)
    if divergence is None:
        return
    if result.divergence is not None:
        earlier = result.divergence
        result.notes.append(f"the values parted too, first at step {earlier.step} ({earlier.what})")
    result.outcome, result.divergence = DIFFERENT, divergence
    result.migrated.device = f"{divergence.migrated}, not {side.device}"


def _pairs(records: list[dict[int, Record]], result: Verification) -> list[tuple[int, Record, Record]]:
    """Rank with rank; or, when the sides ran different numbers of ranks, what the global batch decides."""
    ours, theirs = records
    if not ours or not theirs:
        return []
    if len(ours) == len(theirs):
        return [(rank, ours[rank], theirs[rank]) for rank in sorted(ours) if rank in theirs]
    result.notes.append(
        f"the legacy side ran {len(ours)} {'rank' if len(ours) == 1 else 'ranks'} and the migrated side {len(theirs)}: "
        "compared what the global batch decides (the parameters, the gradients after averaging, the loss as the "
        "mean over the ranks); batches and outputs are per rank and not compared")
    return [(0, global_view(ours), global_view(theirs))]


def _compare_ranks(result: Verification, pairs, legacy: Path, migrated: Path, sides: list[Side],
                   complete_only: bool) -> None:
    firsts = []
    for rank, ours, theirs in pairs:
        comparison = compare(ours, theirs, result.rtol, complete_only=complete_only)
        if rank == pairs[0][0]:
            result.rows, result.compared, result.outputs = comparison.rows, comparison.compared, comparison.outputs
            if comparison.gradient_noise is not None:
                result.notes.append(
                    f"gradients differed (up to {comparison.gradient_noise:.1e} relative) while every parameter "
                    "after them agreed: backward passes that sum in another order differ at rounding level")
            if comparison.residue:
                names = ", ".join(sorted(comparison.residue)[:5]) + (", ..." if len(comparison.residue) > 5 else "")
                result.notes.append(
                    f"not compared after the steps: {names}, whose gradients were rounding residue on both sides "
                    "(an adaptive optimizer such as Adam scales residue up to a tenth of the learning rate); the "
                    "losses and outputs show whether they matter")
        if comparison.first is not None:
            firsts.append((comparison.first.step, rank, comparison.first, ours, theirs))
    if not firsts:
        return
    step, rank, first, ours, theirs = min(firsts, key=lambda entry: (entry[0], entry[1]))
    result.outcome = DIFFERENT
    legacy_side = sides[0]
    legacy_env = {k: v for k, v in legacy_side.env.items() if k in causes.BF16_VARS}
    found = edits(legacy, migrated, legacy_side.kind, scripts=(legacy_side.script, sides[1].script))
    result.divergence = causes.explain(first, ours, theirs, legacy_env, found, original=legacy_side.kind)
    if first.what == "batch" and causes.ranks_alone([p[1] for p in pairs], [p[2] for p in pairs]):
        causes.lone_ranks(result.divergence)
    if len(pairs) > 1:
        result.notes.append(f"{len(pairs)} ranks compared; the first divergence is on rank {rank}")


def edits(legacy: Path, migrated: Path, kind: str = original.LEGACY,
          scripts: tuple[Path, Path] | None = None) -> list[Edit]:
    """What the rewrite does to the legacy project (from a check run, nothing written) and the markers it left
    in the migrated one: the places a divergence may come from. A script stands for its folder, where its
    launcher and its modules are; with the entry ``scripts`` of both sides, only the files each one imports
    (and the folder's files that are not Python) count, not a sibling script's."""
    legacy, migrated = (path if path.is_dir() else path.parent for path in (legacy, migrated))
    ours = program.program_files(scripts[0], legacy) if scripts else None
    theirs = program.program_files(scripts[1], migrated) if scripts else None
    from neuron_migrate.config import ConfigError, load_config
    from neuron_migrate.migrate.runner import run
    from neuron_migrate.rules import catalog

    risks_of = {rule_id: list(rule.get("risks", [])) for rule_id, rule in catalog.catalog().items()}
    found: list[Edit] = []
    try:
        config = load_config([legacy], migrate_from="cuda" if kind == original.CUDA else None)
        report = run([legacy], config, mode="check", diffs=False)
    except (ConfigError, OSError):  # a configuration the legacy tree cannot load must not hide the comparison
        report = None
    if report is not None:
        for file in report.files:
            if ours is not None and not program.belongs(Path(file.path), ours):
                continue
            for finding in file.findings:
                found.append(Edit(finding.rule, file.path, finding.span.line, finding.message, list(finding.risks)))
    left = causes.markers(migrated, risks_of)
    return [*found, *(edit for edit in left if theirs is None or program.belongs(Path(edit.path), theirs))]


def _side_run(done: Finished, records: dict[int, Record], options: Options) -> SideRun:
    record = records.get(0) or next(iter(records.values()), Record(0))
    env = {k: v for k, v in done.side.env.items() if k in NUMERIC_VARS}
    command, seconds = done.command, done.seconds
    if not command:  # records made elsewhere: what they say of their run
        start, stop = next(iter(record.of("start")), {}), next(iter(record.of("stop")), {})
        command = list(start.get("argv") or [])
        seconds = (stop.get("time") or 0) - (start.get("time") or 0) if stop.get("time") else 0.0
    run = SideRun(done.side.name, str(done.side.script), command, str(done.side.cwd),
                  _device(done, record, bool(options.legacy_args)),
                  done.returncode, round(seconds, 2), record.steps, record.stopped, network=record.network,
                  environment=env, kind=done.side.kind)
    run.error = _error(done, record, options)
    if run.error:
        run.output_tail = _tail(done.stderr or done.stdout)
    return run


def _device(done: Finished, record: Record, legacy_args: bool = False) -> str:
    """The device the side's tensors were on, as the recorder saw them (the legacy one is only known then)."""
    if done.side.name != "legacy":
        return done.side.device
    seen = next((t["device"] for e in record.events for t in e.get("tensors", ()) if e["kind"] != "batch"), None)
    if seen is None:
        return ""  # it made no tensor the recorder saw
    if done.side.kind == original.CUDA:
        return _cuda_device(seen, record, legacy_args)
    pjrt = done.side.env.get("PJRT_DEVICE")
    return f"{seen} (PJRT_DEVICE={pjrt})" if pjrt else seen


def _cuda_device(seen: str, record: Record, legacy_args: bool = False) -> str:
    """Where a CUDA original ran: its GPU, or the CPU with the reason (no GPU: the program's own fallback, or
    what --legacy-args told it, such as ``--device cpu``)."""
    if seen == "cuda":
        gpu = next((e["gpu"] for e in record.of("settings") if e.get("gpu")), "")
        return f"cuda ({gpu})" if gpu else "cuda"
    start = next(iter(record.of("start")), {})
    if seen == "cpu" and start.get("cuda") is False:
        return ("cpu (no GPU here: as --legacy-args asked)" if legacy_args
                else "cpu (no GPU here: the program's own fallback)")
    return seen


def _error(done: Finished, record: Record, options: Options) -> str:
    """Why a side failed, in a sentence; empty when it did not (a run the recorder stopped succeeded, whatever a
    launcher made of its worker's early exit)."""
    if done.timed_out:
        return f"did not finish in {options.timeout:g} s (raise --timeout or lower --steps)"
    if done.returncode == 0 or done.cancelled or record.stopped:
        return ""
    for diagnose in (_needs_gpu, _needs_network, _missing_module, _lone_legacy_ranks):
        found = diagnose(done, record)
        if found:
            return found
    if done.returncode is not None and done.returncode < 0:
        return f"killed by signal {-done.returncode}"
    return _last_exception(done) or f"exited with status {done.returncode}"


def _needs_gpu(done: Finished, record: Record) -> str:
    if done.side.kind != original.CUDA:
        return ""
    said = original.needs_gpu(RANK_PREFIX.sub("", done.stderr + done.stdout))
    if not said:
        return ""
    return (f"{NEEDS_GPU}: the program uses CUDA with no fallback to the CPU (a .cuda() or \"cuda\" device it does "
            f"not check with torch.cuda.is_available()), and {done.side.python} sees no GPU here ({said}); record "
            "it on a machine with a GPU and compare its records here (the commands below)")


def _needs_network(done: Finished, record: Record) -> str:
    output = done.stderr + done.stdout
    if not record.network and not any(text in output for text in NETWORK_ERRORS):
        return ""
    tried = record.network or sorted(set(ADDRESS.findall(output)))[:3]
    hosts = f" (it tried {', '.join(tried)})" if tried else ""
    return (f"needs the network{hosts}: verify runs both sides offline so that they read the same data; "
            "download the model or dataset once and point both sides at the local copy (docs/verify.md), "
            "or pass --allow-network")


def _missing_module(done: Finished, record: Record) -> str:
    missing = MISSING_MODULE.findall(done.stderr + done.stdout)
    if not missing:
        return ""
    hint = ""
    if done.side.name == "legacy":
        hint = (" (pass --original-python: an interpreter with the original's libraries)" if done.side.kind == "cuda"
                else " (pass --legacy-python: the interpreter of the legacy environment)")
    return f"{done.side.python} has no module {missing[-1]!r}{hint}"


def _lone_legacy_ranks(done: Finished, record: Record) -> str:
    if done.side.nproc == 1 or done.side.name != "legacy" or record.events:
        return ""
    return (f"could not start {done.side.nproc} ranks ({_last_exception(done) or f'status {done.returncode}'}); "
            "torch_xla's PJRT CPU device runs one process: rerun with --legacy-nproc 1 and give the legacy "
            "side the same global batch with --legacy-args (the per-rank batch times the ranks)")


def _last_exception(done: Finished) -> str:
    raised = EXCEPTION_LINE.findall(RANK_PREFIX.sub("", done.stderr))
    return raised[-1] if raised else ""


def _tail(text: str) -> str:
    return "\n".join(text.rstrip().splitlines()[-TAIL_LINES:])


def _add_notes(result: Verification, records: list[dict[int, Record]]) -> None:
    for name, side in zip(("legacy", "migrated"), records):
        for failure in sorted({f for record in side.values() for f in record.failures}):
            result.notes.append(f"the {name} side's recorder could not read its {failure}; "
                                "those values are not compared")
    legacy, migrated = records[0].get(0), records[1].get(0)
    if legacy is None or migrated is None:
        return
    if legacy.steps != migrated.steps:
        result.notes.append(f"the legacy side made {legacy.steps} optimizer steps, the migrated side {migrated.steps}")
    elif 0 < legacy.steps < result.steps_asked and not legacy.stopped:
        result.notes.append(f"the programs ended after {legacy.steps} of the {result.steps_asked} steps asked")
