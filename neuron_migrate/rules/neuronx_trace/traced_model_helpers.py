"""NM405: traced-model helpers (lazy_load, replace_weights, dynamic_batch, ...)"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.neuronx_trace.common import DOCS_COMPILE, TRIGGERS
from neuron_migrate.rules.tables.neuronx_trace import ROWS, TRACED_MODEL_HELPERS


@register
class TracedModelHelpers(Rule):
    """lazy_load, async_load, replace_weights, move_trace_to_device, dynamic_batch worked on traced
    models; with torch.compile the model is an ordinary module on device "neuron" (DOCS_COMPILE)."""

    meta = RuleMeta(
        "NM405",
        "traced-model helpers (lazy_load, replace_weights, dynamic_batch, ...)",
        safety=MANUAL,
        risks=frozenset({"performance"}),
        summary="Helpers for traced models have no counterpart: the compiled model is an ordinary module.",
        docs=(DOCS_COMPILE,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import torch_neuronx\n\n"
                "model = torch_neuronx.dynamic_batch(model)\n"
            ),
            after=(
                "import torch_neuronx\n\n"
                f"# TODO(neuron-migrate NM405): {TRACED_MODEL_HELPERS['dynamic_batch']}\n"
                "model = torch_neuronx.dynamic_batch(model)\n"
            ),
        ),
    )
    rows = ROWS
