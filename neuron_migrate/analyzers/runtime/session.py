"""``watch()``: record what a block of code does on a static-shape compiler, and report it as findings.

    with watch(steps=1) as w:
        train()
    w.findings(); w.report(command="...")

While active: ``torch._dynamo.config.automatic_dynamic_shapes`` is False (every new shape recompiles, as on the
neuron backend), the recompile limits are raised so every recompilation is seen, compilations and graph breaks
are recorded, and the op recorder runs for the first ``steps`` steps. Everything is restored on exit.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

from neuron_migrate.analyzers.runtime.lines import Attribution, Location

RECOMPILE_LIMIT = 1024
_HOOK_WARNING = r"Using `torch.compile\(module\)` when there are global hooks"


@dataclass
class Summary:
    graphs: int = 0  # graphs compiled
    compilations: int = 0
    recompiles: int = 0
    graph_breaks: int = 0
    ops_recorded: int = 0
    steps_recorded: int = 0
    step_unit: str = "optimizer steps"
    wall_seconds: float = 0.0
    emulated: bool = False
    notes: list[str] = field(default_factory=list)

    def text(self) -> str:
        device = "neuron emulated on CPU" if self.emulated else "this machine"
        span = f"over {self.steps_recorded} {self.step_unit}" if self.steps_recorded else "during the run"
        return (f"{_count(self.graphs, 'graph')} compiled, {_count(self.recompiles, 'recompile')}, "
                f"{_count(self.graph_breaks, 'graph break')}; {self.ops_recorded} ops recorded {span}; "
                f"{self.wall_seconds:.1f} s on {device}")


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


class Watch:
    """The recording behind ``watch()``; ``findings()``, ``summary()`` and ``report()`` read it (also while active)."""

    def __init__(self, steps: int = 1, *, user_roots=(), default_location: Location | None = None) -> None:
        self.steps = steps
        self.user_roots = tuple(user_roots)
        self.default_location = default_location
        self.emulated = False
        self.device_run = False  # a real neuron device is in use (set by analyze_script)
        self.fallback_ops: list[tuple[str, int | None]] = []  # filled by analyze_script on a real device
        # (frames innermost first, what happened) when the analysed program died; set by analyze_script
        self.failure: tuple[list[tuple[str, int]], str] | None = None
        self.notes: list[str] = []
        self._active = False
        self._saved: dict[str, object] = {}
        self._started = 0.0
        self.wall_seconds = 0.0
        self._findings = None
        self._summary = None

    # ----- context manager -----
    def __enter__(self) -> Watch:
        import torch
        import torch._dynamo

        from neuron_migrate.analyzers.emulator import is_active
        from neuron_migrate.analyzers.runtime.compiles import CompileMonitor
        from neuron_migrate.analyzers.runtime.recorder import OpRecorder, StepWindow, start

        self.emulated = self.emulated or is_active()
        config = torch._dynamo.config
        overrides = {"automatic_dynamic_shapes": False, "recompile_limit": RECOMPILE_LIMIT,
                     "accumulated_recompile_limit": RECOMPILE_LIMIT * 8}
        for name, value in overrides.items():
            if hasattr(config, name):
                self._saved[name] = getattr(config, name)
                setattr(config, name, value)
        self.attribution = Attribution(self.user_roots)
        self.monitor = CompileMonitor(self.attribution)
        self.monitor.install()
        self.recorder = OpRecorder(self.attribution, device_run=self.emulated or self.device_run)
        self.window = StepWindow(self.steps, self._stop_recording)
        self._compiles_at_hooks = len(self.monitor.events)
        warnings.filterwarnings("ignore", message=_HOOK_WARNING)
        self._warning_filter = warnings.filters[0]
        self.window.install()
        start(self.recorder)
        self._recording = True
        self._active = True
        self._started = time.perf_counter()
        return self

    def __exit__(self, *exc) -> bool:
        self.stop()
        return False

    def stop(self) -> None:
        if not self._active:
            return
        import torch._dynamo

        self.wall_seconds = time.perf_counter() - self._started
        self._stop_recording()
        self.window.remove_module_hooks()
        self.monitor.uninstall()
        config = torch._dynamo.config
        for name, value in self._saved.items():
            setattr(config, name, value)
        try:
            warnings.filters.remove(self._warning_filter)
        except ValueError:
            pass
        self._active = False

    def _stop_recording(self) -> None:
        from neuron_migrate.analyzers.runtime.recorder import pop_if_on_top

        if not self._recording:
            pop_if_on_top(self.recorder)  # a pause left it under another mode: try again
            return
        self._recording = False
        if not pop_if_on_top(self.recorder):
            self.notes.append("the op recorder was paused, not removed: another dispatch mode sat above it")
        self.window.remove_step_hook()
        # module hooks that a compiled graph has seen are part of its guards: removing them would recompile
        if len(self.monitor.events) == self._compiles_at_hooks:
            self.window.remove_module_hooks()

    # ----- results -----
    def findings(self):
        if self._findings is None or self._active:
            self._build()
        return self._findings

    def summary(self) -> Summary:
        if self._summary is None or self._active:
            self._build()
        return self._summary

    def _build(self) -> None:
        from neuron_migrate.analyzers.runtime.findings import (
            FindingSet,
            add_breaks,
            add_fallbacks,
            add_ops,
            recompilations,
            recompile_clause,
            shape_advice,
        )

        self.monitor.drain()
        found = FindingSet()
        groups, recompiles, ours = recompilations(self.monitor, self.default_location)
        for group in groups:
            found.add("NA501", group.location, recompile_clause(group))
        for advice in shape_advice(self.monitor, self.default_location):
            found.add("NA503", advice.location, advice.text, fix=advice.fix)
        breaks, own_breaks = add_breaks(found, self.monitor)
        add_ops(found, list(self.recorder.hits.values()), self.window.describe())
        add_fallbacks(found, self.fallback_ops, self.recorder.first_seen, self.default_location)
        if self.failure is not None:
            frames, what = self.failure
            location = self.attribution.locate(frames)[0] if frames else None
            found.add("NA507", location or self.default_location, what)
        self._findings = found.build()
        notes = list(self.notes)
        if ours:
            notes.append(f"{ours} recompilation(s) caused by the analysis' own module hooks were left out")
        if own_breaks:
            notes.append(f"{own_breaks} graph break(s) inside the emulator were left out")
        events = [e for e in self.monitor.events.values() if not e.own]
        self._summary = Summary(
            graphs=sum(1 for e in events if e.graph_ops),
            compilations=len(events),
            recompiles=recompiles,
            graph_breaks=breaks,
            ops_recorded=self.recorder.ops,
            steps_recorded=self.window.recorded,
            step_unit=self.window.unit,
            wall_seconds=self.wall_seconds if not self._active else time.perf_counter() - self._started,
            emulated=self.emulated,
            notes=notes,
        )

    def report(self, command: str = ""):
        """The findings as an audit report: one FileResult per source file with findings."""
        from neuron_migrate import __version__
        from neuron_migrate.analyzers.hazards import HAZARDS
        from neuron_migrate.report.model import MANUAL, FileResult, Report

        findings = self.findings()
        files: dict[str, FileResult] = {}
        for finding in findings:
            files.setdefault(finding.path, FileResult(finding.path)).findings.append(finding)
        rules = {}
        for rule_id in sorted({f.rule for f in findings}):
            hazard = HAZARDS[rule_id]
            rules[rule_id] = {
                "id": rule_id, "title": hazard.title, "safety": MANUAL, "risks": ["performance"],
                "summary": f"{hazard.why}. Fix: {hazard.fix}", "docs": list(hazard.docs), "example": None,
            }
        return Report(tool_version=__version__, command=command, mode="audit", files=list(files.values()),
                      rules=rules, duration_seconds=self.summary().wall_seconds).complete()


def watch(steps: int = 1, *, user_roots=()) -> Watch:
    """Record compilations, recompilations, graph breaks and (for the first ``steps`` steps) data-dependent and
    custom ops of the code run inside the ``with`` block."""
    return Watch(steps, user_roots=user_roots)
