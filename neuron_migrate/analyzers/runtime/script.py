"""``analyze_script``: run a user's script (or ``-m module``) in this process under ``watch()``.

The program runs as ``python`` would run it (``sys.argv``, ``__main__``, ``sys.path[0]``; its exit status is
recorded, ``SystemExit`` never leaves). Without a real TorchNeuron the CPU emulator of the ``"neuron"`` device is
activated when the script mentions "neuron" (``emulate=None``), or when asked (``emulate=True``). With a real
torch-neuronx, its record of ops that fell back to the CPU becomes NA506 findings.
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import shlex
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from neuron_migrate.analyzers.launch import single_process_launch
from neuron_migrate.analyzers.runtime.lines import Attribution
from neuron_migrate.analyzers.runtime.session import Summary, Watch
from neuron_migrate.report.model import Finding, Report

COMMAND = "audit --run"


@dataclass
class RuntimeResult:
    findings: list[Finding]
    report: Report
    emulated: bool
    device: str  # "neuron", "neuron (emulated on CPU)" or "cpu"
    exit_code: int  # the script's own exit status
    notes: list[str] = field(default_factory=list)
    summary: Summary = field(default_factory=Summary)


def analyze_script(target: str, args: Sequence[str] = (), *, module: bool = False, steps: int = 1,
                   emulate: bool | None = None) -> RuntimeResult:
    """Run ``target`` with ``args`` under ``watch(steps)`` and return its findings.

    Raises ``RealDeviceAvailable`` when ``emulate=True`` on a machine with a real torch-neuronx."""
    from neuron_migrate.analyzers import emulator

    argv_before, path_before = list(sys.argv), list(sys.path)
    notes: list[str] = []
    try:
        sys.path.insert(0, os.getcwd() if module else os.path.dirname(os.path.abspath(target)))
        entry, root = _entry(target, module)
        real = emulator.real_torch_neuronx()
        if emulate is None:
            emulate = real is None and entry is not None and b"neuron" in entry.read_bytes()
        if emulate:
            emulator.activate(banner=False)
        emulated = emulator.is_active()
        if emulated:
            emulator.tensors_placed(reset=True)
        if emulated:
            notes.append(emulator.BANNER)
        device = "neuron" if real else "neuron (emulated on CPU)" if emulated else "cpu"
        neuronx = _device_module(notes) if real else None

        import torch._dynamo

        torch._dynamo.reset()  # compile state of earlier runs in this process must not hide recompilations
        roots = [root] if root is not None else []
        default = Attribution(roots).location(str(entry), 1) if entry is not None else None
        watcher = Watch(steps, user_roots=roots, default_location=default)
        watcher.emulated = emulated
        watcher.device_run = real is not None
        with watcher, single_process_launch(notes):
            exit_code, watcher.failure = _run(target, list(args), module, notes)
        if emulated and not emulator.tensors_placed():
            notes.append(emulator.NOTHING_PLACED)
        if neuronx is not None:
            watcher.fallback_ops = _fallback_ops(neuronx, notes)
            _device_metrics(neuronx, notes)
    finally:
        sys.argv[:] = argv_before
        sys.path[:] = path_before
    command = f"{COMMAND} " + shlex.join([*(["-m"] if module else []), target, *args])
    report = watcher.report(command=command)
    summary = watcher.summary()
    return RuntimeResult(watcher.findings(), report, emulated, device, exit_code, notes + summary.notes, summary)


def _entry(target: str, module: bool) -> tuple[Path | None, Path | None]:
    """(the file that runs first, the folder whose files count as the user's)."""
    if not module:
        path = Path(target).resolve()
        return (path if path.is_file() else None), path.parent
    try:
        spec = importlib.util.find_spec(target)
        if spec is not None and spec.submodule_search_locations:  # a package: python -m runs its __main__
            spec = importlib.util.find_spec(f"{target}.__main__")
        top = importlib.util.find_spec(target.split(".")[0])
    except (ImportError, ValueError):
        return None, None
    entry = Path(spec.origin) if spec is not None and spec.origin and os.path.isfile(spec.origin) else None
    if top is not None and top.submodule_search_locations:
        root = Path(next(iter(top.submodule_search_locations)))
    else:
        root = entry.parent if entry is not None else None
    return entry, root


def _run(target: str, args: list[str], module: bool, notes: list[str]):
    """Run the program; returns (its exit status, (frames, what happened) when it failed, else None)."""
    sys.argv[:] = [target, *args]
    try:
        if module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        status = _exit_status(exc.code)
        failure = (_frames(exc), f"the program exited with status {status}") if status else None
        return status, failure
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the script failed; report what ran before it did
        traceback.print_exc()
        first = str(exc).splitlines()[0] if str(exc) else ""
        what = f"the program raised {type(exc).__name__}: {first}".rstrip(": ")
        notes.append(what)
        return 1, (_frames(exc), what)
    return 0, None


def _frames(exc: BaseException) -> list[tuple[str, int]]:
    """(filename, line) of the exception's traceback, innermost first."""
    return [(frame.filename, frame.lineno or 1) for frame in reversed(traceback.extract_tb(exc.__traceback__))]


def _exit_status(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # as the interpreter does for sys.exit("message")
    return 1


# ----- a real torch-neuronx (this path cannot run without Trainium; every call is guarded) -----
def _device_module(notes: list[str]):
    try:
        import torch_neuronx
    except Exception as exc:  # noqa: BLE001
        notes.append(f"torch_neuronx could not be imported: {exc}")
        return None
    clear = getattr(torch_neuronx, "clear_op_tracking", None)
    if callable(clear):
        try:
            clear()
        except Exception as exc:  # noqa: BLE001
            notes.append(f"torch_neuronx.clear_op_tracking() failed: {exc}")
    return torch_neuronx


def _fallback_ops(neuronx, notes: list[str]) -> list[tuple[str, int | None]]:
    read = getattr(neuronx, "get_fallback_ops", None)
    if not callable(read):
        notes.append("this torch_neuronx has no get_fallback_ops(): CPU fallbacks were not read")
        return []
    try:
        return parse_fallback_ops(read())
    except Exception as exc:  # noqa: BLE001
        notes.append(f"torch_neuronx.get_fallback_ops() failed: {exc}")
        return []


def parse_fallback_ops(raw) -> list[tuple[str, int | None]]:
    """The documented return is a list of op names; accept "name=count" strings, (name, count) pairs, a
    {name: count} mapping and objects with ``name``/``count`` too, since the format is not specified."""
    counts: dict[str, int | None] = {}
    items = raw.items() if isinstance(raw, dict) else raw or ()
    for item in items:
        name, count = item, None
        if isinstance(item, tuple) and len(item) == 2:
            name, count = item
        elif not isinstance(item, str) and hasattr(item, "name"):
            name, count = item.name, getattr(item, "count", None)
        name = str(name)
        if "=" in name:
            name, _, tail = name.partition("=")
            count = count if count is not None else tail
        try:
            count = int(count) if count is not None else None
        except (TypeError, ValueError):
            count = None
        name = name.strip()
        if "::" not in name and "." in name:  # aten.add.Tensor -> aten::add.Tensor
            namespace, _, rest = name.partition(".")
            name = f"{namespace}::{rest}"
        if name not in counts:
            counts[name] = count
        elif count is not None:
            counts[name] = (counts[name] or 0) + count
    return list(counts.items())


def _device_metrics(neuronx, notes: list[str]) -> None:
    read = getattr(neuronx, "get_dynamo_metrics", None)
    if not callable(read):
        return
    try:
        metrics = read()
    except Exception as exc:  # noqa: BLE001
        notes.append(f"torch_neuronx.get_dynamo_metrics() failed: {exc}")
        return
    if metrics:
        text = " ".join(str(metrics).split())
        notes.append("neuron compile metrics: " + (text if len(text) <= 400 else text[:397] + "..."))
