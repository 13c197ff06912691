"""NM411: libneuronxla (XLA PJRT plugin) use"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.neuronx_trace.common import DOCS_BEST_PRACTICES, DOCS_ENV, LegacyUse, LegacyUseRule
from neuron_migrate.rules.rows import row_for
from neuron_migrate.rules.tables.neuronx_trace import LIBNEURONXLA, LIBNEURONXLA_OTHER, ROWS


# ----- NM411: libneuronxla, the XLA-era PJRT plugin -----------------------------------------------

@register
class LibneuronxlaRemoved(LegacyUseRule):
    """``libneuronxla`` is the PJRT plugin through which torch_xla reached Neuron devices; TorchNeuron
    runs the device natively and never loads it (DOCS_BEST_PRACTICES, DOCS_ENV). Scripts patched its
    environment set-up; the settings move to environment variables."""

    meta = RuleMeta(
        "NM411",
        "libneuronxla (XLA PJRT plugin) use",
        safety=MANUAL,
        summary=(
            "libneuronxla is not installed with TorchNeuron; its environment hooks become NEURON_CC_FLAGS and "
            "NEURON_RT_* variables."
        ),
        docs=(DOCS_ENV, DOCS_BEST_PRACTICES),
        triggers=(b"libneuronxla",),
        example=Example(
            before=(
                "import libneuronxla\n\n"
                "libneuronxla.configure_environment = configure_for_tests\n"
            ),
            after=(
                "import libneuronxla\n\n"
                f"# TODO(neuron-migrate NM411): {LIBNEURONXLA['configure_environment']}\n"
                "libneuronxla.configure_environment = configure_for_tests\n"
            ),
        ),
    )
    prefixes = ("libneuronxla",)
    rows = ROWS

    def handle_use(self, original, updated, use: LegacyUse):
        row = row_for(self.row_table, use.qname)
        self.ctx.manual(self.meta, original, row.action.step if row else LIBNEURONXLA_OTHER)
        return updated
