"""NM425: pad_model -> a tensor-parallel size that divides the heads"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.neuronx_distributed.common import DOCS_TP, PLAN_SHORT, TRIGGERS, NxdRule
from neuron_migrate.rules.tables.neuronx_distributed import PAD_MODEL, ROWS


@register
class PadModel(NxdRule):
    """``pad_model`` padded attention heads to a multiple of the TP degree; DTensor TP has no such helper
    (DOCS_TP)."""

    meta = RuleMeta(
        "NM425",
        "pad_model -> a tensor-parallel size that divides the heads",
        safety=MANUAL,
        risks=frozenset({"numerics"}),
        summary="There is no head-padding helper: pick a TP size that divides the heads, or pad the config.",
        docs=(DOCS_TP,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from neuronx_distributed.parallel_layers.pad import pad_model\n\n"
                "model = pad_model(model, tp_degree=32, n_heads=40)\n"
            ),
            after=(
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"pad_model in order: {PLAN_SHORT}\n"
                "from neuronx_distributed.parallel_layers.pad import pad_model\n\n"
                f"# TODO(neuron-migrate NM425): {PAD_MODEL}\n"
                "model = pad_model(model, tp_degree=32, n_heads=40)\n"
            ),
        ),
    )
    rows = ROWS
