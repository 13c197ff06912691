"""NM162: XLA trace annotations -> torch.profiler.record_function"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Edit, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import bind_args
from neuron_migrate.rules.tables.xla_debug import PROFILE, PROFILER_MODULE
from neuron_migrate.rules.xla_debug.common import ANNOTATIONS, DOCS_PROFILER, STEP_TRACE_REVIEW


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
            self.ctx.manual(
                self.meta, original, f"use `with torch.profiler.record_function(name):` inside a {PROFILE} block"
            )
            return updated
        metadata = [a.keyword.value for a in updated.args if a.keyword is not None and a.keyword.value not in params]
        review = ""
        if metadata:
            keywords = ", ".join(f"{k}=" for k in metadata)
            review = f"the span's metadata ({keywords}) is dropped: record_function takes only a name"
        elif name == "StepTrace":
            review = STEP_TRACE_REVIEW
        profiler = self.ctx.require_import("torch.profiler")
        label = bound["name"].with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT, comma=cst.MaybeSentinel.DEFAULT)
        func = self.ctx.expr(f"{profiler}.record_function")
        return Edit(updated.with_changes(func=func, args=[label]), review=review)
