"""NM409: other XLA-era torch_neuronx API"""

from __future__ import annotations

import libcst as cst

from neuron_migrate import rules as rule_families
from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.neuronx_trace.analyze_to_fallback_ops import AnalyzeToFallbackOps
from neuron_migrate.rules.neuronx_trace.common import (
    COMPILE_LATER,
    DOCS_COMPILE,
    DOCS_NO_XLA_INFERENCE,
    TRIGGERS,
    LegacyUse,
    LegacyUseRule,
)
from neuron_migrate.rules.neuronx_trace.core_placement import CorePlacement
from neuron_migrate.rules.neuronx_trace.data_parallel_to_processes import DataParallelToProcesses
from neuron_migrate.rules.neuronx_trace.device_count import DeviceCount
from neuron_migrate.rules.neuronx_trace.nki_jit_to_nki_op import NkiJitToNkiOp
from neuron_migrate.rules.neuronx_trace.trace_to_compile import TraceToCompile
from neuron_migrate.rules.neuronx_trace.traced_model_helpers import TracedModelHelpers
from neuron_migrate.rules.rows import Manual, row_for
from neuron_migrate.rules.tables.neuronx_trace import LEGACY_PARTS, ROWS

# ----- NM409: the rest of the XLA-era torch_neuronx ------------------------------------------------

TABLE_RULES = (TraceToCompile, DataParallelToProcesses, AnalyzeToFallbackOps, TracedModelHelpers, CorePlacement,
               NkiJitToNkiOp, DeviceCount)


@register
class OtherXlaEraApi(LegacyUseRule):
    """Any other use of the XLA-era parts of torch_neuronx (``xla_impl``, ``experimental``, ``testing``,
    ``pyhlo``, ...): the package's legacy entries in LEGACY_MODULES, none of which TorchNeuron ships."""

    meta = RuleMeta(
        "NM409",
        "other XLA-era torch_neuronx API",
        safety=MANUAL,
        summary=(
            "XLA-era torch_neuronx internals (xla_impl, testing, pyhlo, experimental, proto, fsdp_mics) are gone "
            "on TorchNeuron."
        ),
        docs=(DOCS_NO_XLA_INFERENCE, DOCS_COMPILE),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from torch_neuronx.pyhlo import xla_data_pb2\n\n"
                "shape = xla_data_pb2.ShapeProto()\n"
            ),
            after=(
                "from torch_neuronx.pyhlo import xla_data_pb2\n\n"
                "# TODO(neuron-migrate NM409): `torch_neuronx.pyhlo.xla_data_pb2.ShapeProto` is XLA-era torch-neuronx; "
                f"{LEGACY_PARTS['torch_neuronx.pyhlo']}\n"
                "shape = xla_data_pb2.ShapeProto()\n"
            ),
        ),
    )
    prefixes = tuple(p for p in rule_families.LEGACY_MODULES if p.startswith("torch_neuronx."))

    rows = ROWS

    def handle_use(self, original, updated, use: LegacyUse):
        table = "calls" if isinstance(original, cst.Call) else "references"
        if any(use.qname in getattr(rule, table) for rule in TABLE_RULES):
            return updated
        self.ctx.manual(self.meta, original, f"`{use.qname}` is XLA-era torch-neuronx; {self._advice(use.qname)}")
        return updated

    @classmethod
    def _advice(cls, qname: str) -> str:
        leaf = qname.rsplit(".", 1)[-1]
        # A known API reached through an unusual path keeps its own advice.
        for rule in TABLE_RULES:
            for row in rule.rows:
                if isinstance(row.action, Manual) and row.name.rsplit(".", 1)[-1] == leaf:
                    return row.action.step
        if leaf == "trace":
            return f"compile the model instead: `{COMPILE_LATER}`"
        part = row_for(cls.row_table, qname)
        return part.action.step if part else 'do this with stock PyTorch on device "neuron"'
