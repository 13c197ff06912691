"""NM175: xm._maybe_convert_to_cpu -> the tensors of the data copied to the CPU"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Edit, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import UNKNOWN, arg_value, bind_args
from neuron_migrate.rules.xla_utils.common import CONVERT_TO_CPU, DOCS_PYTREE, DOCS_XLA_MODEL

# The stock spelling of what the helper did: every tensor of nested lists, tuples and dicts, copied
# to the CPU (tensors already there come back as they are, as before).
TREE_MAP = "{pytree}.tree_map_only({torch}.Tensor, lambda t: t.cpu(), {data})"
SPELLED = TREE_MAP.format(pytree="torch.utils._pytree", torch="torch", data="data")


@register
class ConvertToCpuToTreeMap(Rule):
    """``xm._maybe_convert_to_cpu(data, convert=True)`` -> ``pytree.tree_map_only(torch.Tensor,
    lambda t: t.cpu(), data)``. The torch_xla helper (DOCS_XLA_MODEL) synced the device tensors of a
    nested structure and, with ``convert``, returned it with CPU copies in their place; ``.cpu()``
    waits for the device on TorchNeuron and PyTorch's pytree walks the same containers (DOCS_PYTREE).
    With ``convert=False`` it returned the data as it was, which is what is left."""

    meta = RuleMeta(
        "NM175",
        "xm._maybe_convert_to_cpu -> a pytree map copying tensors to the CPU",
        safety=SAFE,
        summary=(
            "torch_xla's private helper that copied the tensors of a nested checkpoint to the CPU becomes "
            "torch.utils._pytree.tree_map_only with .cpu()."
        ),
        docs=(DOCS_XLA_MODEL, DOCS_PYTREE),
        example=Example(
            before=(
                "import torch\n"
                "import torch_xla.core.xla_model as xm\n\n"
                'state = {"model": model.state_dict(), "epoch": epoch}\n'
                "cpu_state = xm._maybe_convert_to_cpu(state)\n"
                'torch.save(cpu_state, "checkpoint.pt")\n'
            ),
            after=(
                "import torch\n"
                "import torch.utils._pytree as pytree\n\n"
                'state = {"model": model.state_dict(), "epoch": epoch}\n'
                "cpu_state = pytree.tree_map_only(torch.Tensor, lambda t: t.cpu(), state)\n"
                'torch.save(cpu_state, "checkpoint.pt")\n'
            ),
        ),
    )
    calls = {CONVERT_TO_CPU: "to_tree_map"}
    references = {CONVERT_TO_CPU: "manual_reference"}

    def to_tree_map(self, original: cst.Call, updated: cst.Call, qname: str):
        bound = bind_args(updated, ("data", "convert"))
        if bound is None or "data" not in bound:
            self.ctx.manual(self.meta, original, f"copy the tensors to the CPU with `{SPELLED}`")
            return updated
        data = self.ctx.code(bound["data"].value).strip()
        convert = arg_value(bound, "convert", True)
        if convert is not UNKNOWN and not convert:
            return Edit(bound["data"].value, message="xm._maybe_convert_to_cpu(data, convert=False) -> data")
        copied = self._copied(data)
        if convert is UNKNOWN:
            # A computed flag: the same choice, made where the call was.
            flag = self.ctx.code(bound["convert"].value).strip()
            copied = f"({copied} if {flag} else {data})"
        return self.ctx.expr(copied)

    def manual_reference(self, original: cst.CSTNode, updated: cst.CSTNode, qname: str):
        self.ctx.manual(self.meta, original, f"call `{SPELLED}` where this function is used")
        return updated

    def _copied(self, data: str) -> str:
        pytree = self.ctx.require_import("torch.utils._pytree", alias="pytree")
        torch = self.ctx.require_import("torch")
        return TREE_MAP.format(pytree=pytree, torch=torch, data=data)
