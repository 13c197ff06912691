"""NM404: torch_neuronx.analyze -> torch_neuronx.get_fallback_ops()"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.neuronx_trace.common import DOCS_BEST_PRACTICES, TRIGGERS
from neuron_migrate.rules.tables.neuronx_trace import ANALYZE, ROWS


@register
class AnalyzeToFallbackOps(Rule):
    """``torch_neuronx.analyze`` reported unsupported ops before tracing; TorchNeuron runs them on the CPU
    and lists them in ``torch_neuronx.get_fallback_ops()`` (DOCS_BEST_PRACTICES)."""

    meta = RuleMeta(
        "NM404",
        "torch_neuronx.analyze -> torch_neuronx.get_fallback_ops()",
        safety=MANUAL,
        risks=frozenset({"performance"}),
        summary="Ops the device cannot run are found by running eagerly and reading torch_neuronx.get_fallback_ops().",
        docs=(DOCS_BEST_PRACTICES,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import torch_neuronx\n\n"
                "report = torch_neuronx.analyze(model, example)\n"
            ),
            after=(
                "import torch_neuronx\n\n"
                f"# TODO(neuron-migrate NM404): {ANALYZE}\n"
                "report = torch_neuronx.analyze(model, example)\n"
            ),
        ),
    )
    rows = ROWS
