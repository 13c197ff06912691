"""NM115: lazy/eager mode toggles removed"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Example, Rule, RuleMeta, register
from neuron_migrate.rules.tables.xla_step import ROWS
from neuron_migrate.rules.xla_step.common import DOCS_EAGER, EAGER_CONTEXTS, unwrap_with


@register
class LazyModeToggleRemoval(Rule):
    """Switches between lazy and eager execution, and forced materialisation: TorchNeuron is always
    eager (Neuron eager docs; ``xm.unlazy``, ``eager_mode``)."""

    meta = RuleMeta(
        "NM115",
        "lazy/eager mode toggles removed",
        safety=SAFE,
        summary=(
            "xm.unlazy(), torch_xla.experimental.eager_mode() and `with eager_mode_context(...)` are dropped: "
            "TorchNeuron is eager by default and has no lazy mode to switch."
        ),
        docs=(DOCS_EAGER,),
        example=Example(
            before=(
                "import torch_xla\n"
                "import torch_xla.experimental\n\n"
                "torch_xla.experimental.eager_mode(True)\n"
                "model = build_model()\n"
            ),
            after="model = build_model()\n",
        ),
    )
    rows = ROWS

    def leave_With(self, original: cst.With, updated: cst.With):
        return unwrap_with(self, original, updated, EAGER_CONTEXTS)
