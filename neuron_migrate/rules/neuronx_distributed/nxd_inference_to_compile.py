"""NM431: NxD inference tracing -> torch.compile + DTensor TP"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.neuronx_distributed.common import (
    DOCS_COMPILE,
    DOCS_NO_XLA_INFERENCE,
    DOCS_TP,
    PLAN_SHORT,
    TRIGGERS,
    NxdRule,
)
from neuron_migrate.rules.tables.neuronx_distributed import NXD_INFERENCE, ROWS


@register
class NxdInferenceToCompile(NxdRule):
    """NxD inference (parallel_model_trace/save/load, ModelBuilder, NxDModel) was XLA tracing, which is
    unsupported on Trn2/Trn3 (DOCS_NO_XLA_INFERENCE); TorchNeuron compiles with torch.compile
    (DOCS_COMPILE) on a DTensor-sharded model."""

    meta = RuleMeta(
        "NM431",
        "NxD inference tracing -> torch.compile + DTensor TP",
        safety=MANUAL,
        risks=frozenset({"performance", "checkpoint-format"}),
        summary=(
            "Traced NxD models become a DTensor-sharded model compiled with torch.compile(backend=\"neuron\"); "
            "serving LLMs moves to vLLM Neuron."
        ),
        docs=(DOCS_NO_XLA_INFERENCE, DOCS_COMPILE, DOCS_TP),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from neuronx_distributed.trace import parallel_model_trace\n\n"
                "traced = parallel_model_trace(get_model, example_inputs, tp_degree=2)\n"
            ),
            after=(
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"parallel_model_trace in order: {PLAN_SHORT}\n"
                "from neuronx_distributed.trace import parallel_model_trace\n\n"
                f"# TODO(neuron-migrate NM431): {NXD_INFERENCE}\n"
                "traced = parallel_model_trace(get_model, example_inputs, tp_degree=2)\n"
            ),
        ),
    )
    rows = ROWS
