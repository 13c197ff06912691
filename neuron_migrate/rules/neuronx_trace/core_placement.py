"""NM406: torch_neuronx.experimental core placement -> torch.neuron.set_device"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.neuronx_trace.common import DOCS_MODULE, TRIGGERS
from neuron_migrate.rules.tables.neuronx_trace import CORE_PLACEMENT, ROWS


@register
class CorePlacement(Rule):
    """The experimental core-placement helpers -> ``torch.neuron.set_device`` / ``torch.neuron.device``
    (DOCS_MODULE) or NEURON_RT_VISIBLE_CORES."""

    meta = RuleMeta(
        "NM406",
        "torch_neuronx.experimental core placement -> torch.neuron.set_device",
        safety=MANUAL,
        risks=frozenset({"launch"}),
        summary="Cores are chosen with torch.neuron.set_device / torch.neuron.device or NEURON_RT_VISIBLE_CORES.",
        docs=(DOCS_MODULE,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import torch_neuronx\n\n"
                "with torch_neuronx.experimental.neuron_cores_context(start_nc=2):\n"
                "    model = load_model(path)\n"
            ),
            after=(
                "import torch_neuronx\n\n"
                f"# TODO(neuron-migrate NM406): {CORE_PLACEMENT['neuron_cores_context']}\n"
                "with torch_neuronx.experimental.neuron_cores_context(start_nc=2):\n"
                "    model = load_model(path)\n"
            ),
        ),
    )
    rows = ROWS
