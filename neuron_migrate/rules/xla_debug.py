"""Debugging: the PyTorch/XLA metrics and profiler modules.

TorchNeuron has its own metrics module (``torch_neuronx.metrics``, off unless enabled) with the
same shape of API and differently named counters, and profiles through ``torch.profiler`` viewed in Neuron
Explorer; the XLA profiler server and its trace annotations have no drop-in equivalent.
"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import MANUAL, SAFE, Example, Rule, RuleMeta, StatementReplacement, register
from neuron_migrate.rules.calls import bind_args, name_nodes
from neuron_migrate.rules.tables.xla_debug import NAMES_DIFFER, PROFILE, PROFILE_STEPS, PROFILER, PROFILER_MODULE, ROWS

DOCS_ENV = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/env-vars.html"
DOCS_COMPILE = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html"
DOCS_RESOURCES = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/torchneuron-resources.html"
DOCS_PROFILER = "https://docs.pytorch.org/docs/stable/profiler.html"

@register
class XlaMetricsToNeuron(Rule):
    """``torch_xla.debug.metrics`` -> ``torch_neuronx.metrics`` (its module API: ``report``,
    ``get_counter_value``, ... and ``TORCH_NEURONX_METRICS_ENABLED``, DOCS_ENV; fallback ops per
    DOCS_RESOURCES)."""

    meta = RuleMeta(
        "NM160",
        "XLA metrics -> torch_neuronx.metrics",
        safety=SAFE,
        risks=frozenset({"performance"}),
        summary="The XLA metrics calls map onto torch_neuronx.metrics, whose counters are named differently.",
        docs=(DOCS_ENV, DOCS_RESOURCES, DOCS_COMPILE),
        example=Example(
            before=(
                "import torch_xla.debug.metrics as met\n\n"
                "print(met.metrics_report())\n"
            ),
            after=(
                "import torch_neuronx.metrics\n\n"
                f"# neuron-migrate(NM160): {NAMES_DIFFER}\n"
                "print(torch_neuronx.metrics.report())\n"
            ),
        ),
    )
    rows = ROWS


@register
class XlaProfilerManual(Rule):
    """``torch_xla.debug.profiler`` -> ``torch.profiler`` by hand (DOCS_PROFILER, DOCS_RESOURCES)."""

    meta = RuleMeta(
        "NM161",
        "XLA profiler -> torch.profiler (by hand)",
        safety=MANUAL,
        risks=frozenset({"performance"}),
        summary="The XLA profiler server and trace annotations map onto torch.profiler, not one-to-one.",
        docs=(DOCS_PROFILER, DOCS_RESOURCES),
        example=Example(
            before=(
                "import torch_xla.debug.profiler as xp\n\n"
                "xp.trace(\"localhost:9012\", logdir=\"trace\", duration_ms=2000)\n"
            ),
            after=(
                "import torch_xla.debug.profiler as xp\n\n"
                f"# TODO(neuron-migrate NM161): {PROFILER['trace']}\n"
                "xp.trace(\"localhost:9012\", logdir=\"trace\", duration_ms=2000)\n"
            ),
        ),
    )
    rows = ROWS
    calls = {f"{PROFILER_MODULE}.start_server": "start_server"}

    def start_server(self, original: cst.Call, updated: cst.Call, qname: str):
        if self._server_is_unused(original):
            # The server only opened a port for remote capture; nothing else depends on it, so
            # its line goes (see leave_SimpleStatementLine, which may delete an assignment).
            self.unused_servers.add(id(self.ctx.statement_for_call[id(original)]))
            return updated
        self.ctx.manual(original, PROFILER["start_server"])
        return updated

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.unused_servers: set[int] = set()

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        if id(original) not in self.unused_servers:
            return updated
        self.ctx.todo(f"profiler server: {PROFILE_STEPS}")
        return StatementReplacement([])

    def _server_is_unused(self, call: cst.Call) -> bool:
        """``xp.start_server(port)`` alone on its line, or ``server = ...`` with ``server`` read nowhere."""
        line = self.ctx.statement_for_call.get(id(call))
        if line is None:
            return False
        small = line.body[0]
        if isinstance(small, cst.Expr):
            return True
        if not isinstance(small, cst.Assign) or len(small.targets) != 1:
            return False
        target = small.targets[0].target
        if not isinstance(target, cst.Name):
            return False
        return sum(1 for node in name_nodes(self.ctx.module) if node.value == target.value) == 1


# XLA trace annotation -> the parameters of its signature; ``torch.profiler.record_function(name)``
# takes only the name.
ANNOTATIONS = {
    "Trace": ("name",),
    "StepTrace": ("name", "step_num"),
}
STEP_TRACE_REVIEW = (
    "StepTrace also ended the XLA step (eager TorchNeuron needs no cut); "
    f"inside a {PROFILE} block call prof.step() once per step"
)


@register
class XlaTraceToRecordFunction(Rule):
    """``xp.Trace(name)`` / ``xp.StepTrace(name, step_num=)`` -> ``torch.profiler.record_function(name)``,
    the annotation torch.profiler shows in its trace (DOCS_PROFILER)."""

    meta = RuleMeta(
        "NM162",
        "XLA trace annotations -> torch.profiler.record_function",
        safety=SAFE,
        risks=frozenset({"performance"}),
        summary="A named XLA trace span becomes a torch.profiler.record_function span of the same name.",
        docs=(DOCS_PROFILER,),
        example=Example(
            before=(
                "import torch_xla.debug.profiler as xp\n\n"
                "with xp.Trace(\"forward\"):\n"
                "    loss = model(batch)\n"
            ),
            after=(
                "import torch.profiler\n\n"
                "with torch.profiler.record_function(\"forward\"):\n"
                "    loss = model(batch)\n"
            ),
        ),
    )
    calls = {f"{PROFILER_MODULE}.{name}": "to_record_function" for name in ANNOTATIONS}

    def to_record_function(self, original: cst.Call, updated: cst.Call, qname: str):
        name = qname.removeprefix(f"{PROFILER_MODULE}.")
        params = ANNOTATIONS[name]
        bound = bind_args(updated, params, other_keywords=True)
        if bound is None or "name" not in bound:
            self.ctx.manual(original, f"use `with torch.profiler.record_function(name):` inside a {PROFILE} block")
            return updated
        metadata = [a.keyword.value for a in updated.args if a.keyword is not None and a.keyword.value not in params]
        if metadata:
            keywords = ", ".join(f"{k}=" for k in metadata)
            self.ctx.review(f"the span's metadata ({keywords}) is dropped: record_function takes only a name")
        elif name == "StepTrace":
            self.ctx.review(STEP_TRACE_REVIEW)
        profiler = self.ctx.require_import("torch.profiler")
        label = bound["name"].with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT, comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(func=self.ctx.expr(f"{profiler}.record_function"), args=[label])
