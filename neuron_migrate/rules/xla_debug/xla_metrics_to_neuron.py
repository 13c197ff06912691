"""NM160: XLA metrics -> torch_neuronx.metrics"""

from __future__ import annotations

from neuron_migrate.rules.base import SAFE, Example, Rule, RuleMeta, register
from neuron_migrate.rules.tables.xla_debug import NAMES_DIFFER, ROWS
from neuron_migrate.rules.xla_debug.common import DOCS_COMPILE, DOCS_ENV, DOCS_RESOURCES


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
