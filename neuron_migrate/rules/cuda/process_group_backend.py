"""NM620: "nccl" process-group backend -> the accelerator's backend"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Edit, Example, RuleMeta, register
from neuron_migrate.rules.calls import bind_args
from neuron_migrate.rules.cuda.common import DOCS_DISTRIBUTED, DOCS_TORCH_NEURON, CudaRule, accelerator

# Process-group calls and the position of their backend parameter.
_GROUP_CALLS = {
    "torch.distributed.init_process_group": ("backend",),
    "torch.distributed.distributed_c10d.init_process_group": ("backend",),
    "torch.distributed.new_group": ("ranks", "timeout", "backend"),
    "torch.distributed.distributed_c10d.new_group": ("ranks", "timeout", "backend"),
}
NCCL = "nccl"
_BACKEND_TABLE = (
    'a device type -> backend table: add "neuron": "neuron" for the neuron device, or ask '
    "torch.distributed.get_default_backend_for_device(device) instead"
)


def _is_nccl(node: cst.CSTNode | None) -> bool:
    return isinstance(node, cst.SimpleString) and node.prefix.lower() in ("", "u") and node.evaluated_value == NCCL


@register
class ProcessGroupBackend(CudaRule):
    """``init_process_group("nccl")`` / ``backend="nccl"`` -> ``backend=torch.distributed.
    get_default_backend_for_device(torch.accelerator.current_accelerator())`` (torch 2.13, DOCS_DISTRIBUTED):
    "nccl" on a GPU, "neuron" on Trainium. The same for a ``*backend*`` variable or ``--*backend`` option set to
    "nccl"; a ``{"cuda": "nccl"}`` table of its own gets a TODO. ``DDP(model, device_ids=[local_rank])`` stays as it is: the index names a device of the accelerator."""

    meta = RuleMeta(
        "NM620",
        '"nccl" process-group backend -> the accelerator\'s backend',
        safety=SAFE,
        risks=frozenset({"collectives"}),
        summary=(
            'The "nccl" backend becomes torch.distributed.get_default_backend_for_device() of the accelerator: '
            '"nccl" on a GPU, "neuron" on Trainium.'
        ),
        docs=(DOCS_DISTRIBUTED, DOCS_TORCH_NEURON),
        triggers=(b"nccl",),
        example=Example(
            before=(
                "import torch.distributed as dist\n\n"
                'dist.init_process_group(backend="nccl")\n'
            ),
            after=(
                "import torch.distributed as dist\n"
                "import torch\n\n"
                "dist.init_process_group(backend=dist.get_default_backend_for_device(torch.accelerator.current_accelerator()))\n"
            ),
        ),
    )
    calls = {qname: "group_backend" for qname in _GROUP_CALLS}

    def _backend(self) -> cst.BaseExpression:
        dist = self.ctx.require_import("torch.distributed", alias="dist")
        return self.ctx.expr(f"{dist}.get_default_backend_for_device({accelerator(self.ctx)})")

    def group_backend(self, original: cst.Call, updated: cst.Call, qname: str):
        bound = bind_args(updated, _GROUP_CALLS[qname], other_keywords=True)
        arg = bound.get("backend") if bound else None
        if arg is None or not _is_nccl(arg.value):
            return updated
        args = [a.with_changes(value=self._backend()) if a is arg else a for a in updated.args]
        return Edit(updated.with_changes(args=args), safe=True)

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign):
        names = [t.target for t in updated.targets]
        if not _is_nccl(updated.value) or not any(isinstance(n, cst.Name) and "backend" in n.value.lower() for n in names):
            return updated
        return Edit(updated.with_changes(value=self._backend()), safe=True)

    def leave_Dict(self, original: cst.Dict, updated: cst.Dict):
        """``{"cuda": "nccl", "cpu": "gloo"}``: the code picks its backend by device type itself."""
        for element in original.elements:
            key = element.key if isinstance(element, cst.DictElement) else None
            if isinstance(key, cst.SimpleString) and key.evaluated_value == "cuda" and _is_nccl(element.value):
                # the finding points at the entry, which may lie lines below the marker above the statement
                self.ctx.manual(self.meta, element, _BACKEND_TABLE)
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        """``parser.add_argument("--dist-backend", default="nccl")``."""
        func = updated.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "add_argument"):
            return updated
        flags = [a.value.evaluated_value for a in updated.args if a.keyword is None and isinstance(a.value, cst.SimpleString)]
        if not any(isinstance(f, str) and "backend" in f for f in flags):
            return updated
        default = next((a for a in updated.args if a.keyword is not None and a.keyword.value == "default"), None)
        if default is None or not _is_nccl(default.value):
            return updated
        args = [a.with_changes(value=self._backend()) if a is default else a for a in updated.args]
        return Edit(updated.with_changes(args=args), safe=True)
