"""Stepping: the lazy-tensor graph cut points of PyTorch/XLA have no meaning in eager TorchNeuron.

``xm.mark_step()`` cut and launched the pending XLA graph. TorchNeuron runs eagerly (ops are
queued and fused adaptively) and ``torch.compile`` regions bound graphs, so the call goes away;
where a caller waited for the device, ``torch.neuron.synchronize()`` does that.
"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Example, Rule, RuleMeta, StatementReplacement, register

DOCS_EAGER = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/about-pytorch-neuron.html"
DOCS_MODULE = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/api/torch-neuron-module.html"


@register
class MarkStepRemoval(Rule):
    meta = RuleMeta(
        "NM110",
        "xm.mark_step() / torch_xla.sync() removed",
        safety=SAFE,
        summary="TorchNeuron executes eagerly; there is no lazy graph to cut.",
        docs=(DOCS_EAGER,),
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
        return StatementReplacement([], fallback="drop the call; eager TorchNeuron has no graph to cut")
