"""NM110: xm.mark_step() / torch_xla.sync() removed"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Edit, Example, Rule, RuleMeta, StatementReplacement, register
from neuron_migrate.rules.calls import arg_value, bind_args
from neuron_migrate.rules.xla_step.common import DOCS_EAGER, DOCS_MODULE


# ----- rules -----------------------------------------------------------------------------------


@register
class MarkStepRemoval(Rule):
    meta = RuleMeta(
        "NM110",
        "xm.mark_step() / torch_xla.sync() removed",
        safety=SAFE,
        summary=(
            "TorchNeuron executes eagerly; there is no lazy graph to cut. A call that waited for the "
            "device (`wait=True`) becomes torch.neuron.synchronize()."
        ),
        docs=(DOCS_EAGER, DOCS_MODULE),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "for batch in loader:\n"
                "    loss = model(batch).sum()\n"
                "    loss.backward()\n"
                "    xm.mark_step()\n"
            ),
            after=(
                "for batch in loader:\n"
                "    loss = model(batch).sum()\n"
                "    loss.backward()\n"
            ),
        ),
    )
    calls = {
        "torch_xla.core.xla_model.mark_step": "remove",
        "torch_xla.sync": "remove",
        "torch_xla.torch_xla.sync": "remove",
    }

    def remove(self, original: cst.Call, updated: cst.Call, qname: str):
        args = bind_args(updated, ("wait", "reset_scope"))
        if args is not None and arg_value(args, "wait") is True:
            # A blocking step was a timing or hand-off point: keep the wait, drop the graph cut.
            torch = self.ctx.require_import("torch")
            synchronize = self.ctx.expr(f"{torch}.neuron.synchronize()")
            return Edit(synchronize, message="blocking graph cut replaced by torch.neuron.synchronize()")
        return StatementReplacement([], fallback="drop the call; eager TorchNeuron has no graph to cut")
