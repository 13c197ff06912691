"""NM407: data_parallel.device_count() -> torch.neuron.device_count()"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Example, Rule, RuleMeta, register
from neuron_migrate.rules.neuronx_trace.common import DEVICE_COUNT, DOCS_MODULE, TRIGGERS


@register
class DeviceCount(Rule):
    """``torch_neuronx.xla_impl.data_parallel.device_count()`` counted the NeuronCores visible to the
    process, as ``torch.neuron.device_count()`` does (DOCS_MODULE)."""

    meta = RuleMeta(
        "NM407",
        "data_parallel.device_count() -> torch.neuron.device_count()",
        safety=SAFE,
        summary="Both count the NeuronCores visible to this process.",
        docs=(DOCS_MODULE,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from torch_neuronx.xla_impl.data_parallel import device_count\n\n"
                "cores = device_count()\n"
            ),
            after=(
                "import torch\n\n"
                "cores = torch.neuron.device_count()\n"
            ),
        ),
    )
    calls = {DEVICE_COUNT: "count"}
    references = {DEVICE_COUNT: "count_function"}

    def count(self, original: cst.Call, updated: cst.Call, qname: str):
        if updated.args:
            self.ctx.manual(self.meta, original, "use `torch.neuron.device_count()`")
            return updated
        return self.ctx.expr(f"{self.ctx.require_import('torch')}.neuron.device_count()")

    def count_function(self, original: cst.CSTNode, updated: cst.CSTNode, qname: str):
        return self.ctx.expr(f"{self.ctx.require_import('torch')}.neuron.device_count")
