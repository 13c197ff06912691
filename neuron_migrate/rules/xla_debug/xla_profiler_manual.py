"""NM161: XLA profiler -> torch.profiler (by hand)"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import MANUAL, Edit, Example, Rule, RuleMeta, StatementReplacement, register
from neuron_migrate.rules.calls import name_nodes
from neuron_migrate.rules.tables.xla_debug import PROFILER, PROFILER_MODULE, PROFILE_STEPS, ROWS
from neuron_migrate.rules.xla_debug.common import DOCS_PROFILER, DOCS_RESOURCES


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
        self.ctx.manual(self.meta, original, PROFILER["start_server"])
        return updated

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.unused_servers: set[int] = set()

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        if id(original) not in self.unused_servers:
            return updated
        return Edit(StatementReplacement([]), todo=f"profiler server: {PROFILE_STEPS}")

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
