"""NM111: `with torch_xla.step():` unwrapped"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Example, Rule, RuleMeta, register
from neuron_migrate.rules.xla_step.common import DOCS_EAGER, STEP_CONTEXTS, unwrap_with


@register
class StepContextRemoval(Rule):
    """``with torch_xla.step():`` bounded one lazy graph; eager code needs no such scope."""

    meta = RuleMeta(
        "NM111",
        "`with torch_xla.step():` unwrapped",
        safety=SAFE,
        summary="TorchNeuron executes eagerly; the body of the step block runs as ordinary code.",
        docs=(DOCS_EAGER,),
        example=Example(
            before=(
                "import torch_xla\n\n"
                "for batch in loader:\n"
                "    with torch_xla.step():\n"
                "        loss = model(batch).sum()\n"
                "        loss.backward()\n"
            ),
            after=(
                "for batch in loader:\n"
                "    loss = model(batch).sum()\n"
                "    loss.backward()\n"
            ),
        ),
    )

    def leave_With(self, original: cst.With, updated: cst.With):
        return unwrap_with(self, original, updated, STEP_CONTEXTS)
