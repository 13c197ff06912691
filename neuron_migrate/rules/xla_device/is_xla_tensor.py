"""NM103: xm.is_xla_tensor(t) -> t.device.type == "neuron"."""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Example, RuleMeta, register
from neuron_migrate.rules.calls import ComparisonRule, bind_args
from neuron_migrate.rules.xla_device.common import DOCS_MODULE


@register
class IsXlaTensor(ComparisonRule):
    """``xm.is_xla_tensor(t)`` -> ``t.device.type == "neuron"`` (DOCS_MODULE: tensors on the device)."""

    meta = RuleMeta(
        "NM103",
        'xm.is_xla_tensor(t) -> t.device.type == "neuron"',
        safety=SAFE,
        summary="Tensor placement is read from the tensor's device type.",
        docs=(DOCS_MODULE,),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "if xm.is_xla_tensor(t):\n"
                "    t = t.cpu()\n"
            ),
            after=(
                'if t.device.type == "neuron":\n'
                "    t = t.cpu()\n"
            ),
        ),
    )
    calls = {"torch_xla.core.xla_model.is_xla_tensor": "to_device_check"}
    # `not t.device.type == "neuron"` reads as meant without them.
    PARENTHESIZE_AFTER_NOT = False

    def to_device_check(self, original: cst.Call, updated: cst.Call, qname: str):
        bound = bind_args(updated, ("tensor",))
        if not bound or "tensor" not in bound:
            return updated
        tensor = bound["tensor"].value
        text = self.ctx.code(tensor)
        if not isinstance(tensor, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
            text = f"({text})"
        text = f'{text}.device.type == "neuron"'
        if self.needs_parentheses(original):
            text = f"({text})"
        return self.ctx.expr(text)
