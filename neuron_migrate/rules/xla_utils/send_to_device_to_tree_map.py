"""NM177: xm.send_cpu_data_to_device -> the tensors of the data moved to the device"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import bind_args
from neuron_migrate.rules.xla_utils.common import DOCS_PYTREE, DOCS_XLA_MODEL

SEND_TO_DEVICE = "torch_xla.core.xla_model.send_cpu_data_to_device"
# What the helper did: every tensor of nested lists, tuples and dicts, moved to the device.
TREE_MAP = "{pytree}.tree_map_only({torch}.Tensor, lambda t: t.to({device}), {data})"
SPELLED = TREE_MAP.format(pytree="torch.utils._pytree", torch="torch", device="device", data="data")


@register
class SendToDeviceToTreeMap(Rule):
    """``xm.send_cpu_data_to_device(data, device)`` -> ``pytree.tree_map_only(torch.Tensor, lambda t:
    t.to(device), data)``: the torch_xla helper (DOCS_XLA_MODEL) moved every tensor of a nested structure to
    the device, which PyTorch's pytree does over the same containers (DOCS_PYTREE). An ``input_sharding``
    (SPMD) has no counterpart there and leaves the call to a human."""

    meta = RuleMeta(
        "NM177",
        "xm.send_cpu_data_to_device -> a pytree map moving tensors to the device",
        safety=SAFE,
        summary="torch_xla's helper that moved the tensors of nested data to the device becomes tree_map_only with .to().",
        docs=(DOCS_XLA_MODEL, DOCS_PYTREE),
        example=Example(
            before=(
                "import torch\n"
                "import torch_xla.core.xla_model as xm\n\n"
                "batch = xm.send_cpu_data_to_device(batch, device)\n"
            ),
            after=(
                "import torch\n"
                "import torch.utils._pytree as pytree\n\n"
                "batch = pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), batch)\n"
            ),
        ),
    )
    calls = {SEND_TO_DEVICE: "to_tree_map"}

    def to_tree_map(self, original: cst.Call, updated: cst.Call, qname: str):
        bound = bind_args(updated, ("datas", "device", "input_sharding"))
        if bound is None or "datas" not in bound or "device" not in bound or "input_sharding" in bound:
            self.ctx.manual(self.meta, original, f"move the tensors to the device with `{SPELLED}`")
            return updated
        pytree = self.ctx.require_import("torch.utils._pytree", alias="pytree")
        torch = self.ctx.require_import("torch")
        data = self.ctx.code(bound["datas"].value).strip()
        device = self.ctx.code(bound["device"].value).strip()
        return self.ctx.expr(TREE_MAP.format(pytree=pytree, torch=torch, device=device, data=data))
