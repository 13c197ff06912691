"""NM130: xm.save() -> torch.save() on the writing rank"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import REVIEW, Edit, Example, RuleMeta, register
from neuron_migrate.rules.calls import arg_value, bind_args
from neuron_migrate.rules.tables.xla_distributed import XM
from neuron_migrate.rules.xla_distributed.common import (
    DOCS_CHANGES,
    LEGACY_ARGUMENTS,
    SAVE_CHECK,
    SPACE,
    DistributedRule,
)


# torch_xla.utils.serialization (``xser``) wrote each tensor to a file of its own in ``<path>.tensors`` and a
# pickle of references at ``path``; torch.save writes one file, which torch.load reads.
XSER = "torch_xla.utils.serialization"
XSER_SAVE_CHECK = (
    "xser.save wrote a folder of tensor files next to the path, torch.save writes one file: checkpoints saved "
    "before the migration still need torch_xla's xser.load (convert them once)"
)
XSER_LOAD_CHECK = (
    "reads what torch.save writes; a checkpoint xser.save wrote before the migration (a `.tensors` folder next "
    "to it) needs torch_xla to read: convert it once with `torch.save(xser.load(path), path)`"
)


@register
class SaveToTorchSave(DistributedRule):
    """xm.save(data, path, master_only=True, global_master=False) -> torch.save under a rank guard; the same for
    ``xser.save``, and ``xser.load(path)`` -> ``torch.load`` (every object, as xser unpickled them)."""

    meta = RuleMeta(
        "NM130",
        "xm.save() / xser.save() -> torch.save() on the writing rank",
        safety=REVIEW,
        risks=frozenset({"checkpoint-format"}),
        summary=(
            "xm.save wrote on each host's rank 0 by default (LOCAL_RANK), on global rank 0 with "
            "global_master=True, on every rank with master_only=False, and moved tensors to CPU first; every "
            "rank then waited for the others (a barrier where a process group is started)."
        ),
        docs=(DOCS_CHANGES, "https://pytorch.org/docs/stable/generated/torch.save.html"),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                'xm.save(model.state_dict(), "checkpoint.pt")\n'
            ),
            after=(
                "import os\n"
                "import torch\n"
                "import torch.distributed as dist\n\n"
                "# neuron-migrate(NM130): xm.save moved tensors to CPU first; load with "
                '`map_location="cpu"` or save a CPU copy of the state\n'
                'if int(os.environ.get("LOCAL_RANK", "0")) == 0:\n'
                '    torch.save(model.state_dict(), "checkpoint.pt")\n'
                "if dist.is_initialized():\n"
                "    dist.barrier()\n"
            ),
        ),
    )
    calls = {f"{XM}.save": "to_torch_save", f"{XSER}.save": "to_torch_save", f"{XSER}.load": "to_torch_load"}
    PARAMS = ("data", "file_or_path", "master_only", "global_master", "sync")

    def to_torch_load(self, original: cst.Call, updated: cst.Call, qname: str):
        bound = bind_args(updated, ("path",))
        if bound is None or "path" not in bound:
            return self.manual(original, updated, 'arguments not understood; load with `torch.load(path, map_location="cpu")`')
        path = bound["path"].with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT, comma=cst.MaybeSentinel.DEFAULT)
        call = self.ctx.expr(f'{self.torch}.load(x, map_location="cpu", weights_only=False)')
        call = call.with_changes(args=[path.with_changes(comma=cst.Comma(whitespace_after=SPACE)), *call.args[1:]])
        return Edit(call, message="xser.load() -> torch.load()", review=XSER_LOAD_CHECK)

    def to_torch_save(self, original: cst.Call, updated: cst.Call, qname: str):
        fallback = 'write `torch.save(data, path)` under `if int(os.environ.get("LOCAL_RANK", "0")) == 0:`'
        bound = bind_args(updated, self.PARAMS)
        if bound is None or "data" not in bound or "file_or_path" not in bound:
            return self.manual(original, updated, f"arguments not understood; {fallback}")
        master_only = arg_value(bound, "master_only", True)
        global_master = arg_value(bound, "global_master", False)
        if type(master_only) is not bool or type(global_master) is not bool:
            return self.manual(original, updated, f"computed master_only / global_master; {fallback} (or RANK)")
        if self.shape(original) != ("bare", None):
            return self.manual(original, updated, f"not a statement of its own; {fallback}")
        if self.keeps_legacy_arguments(original, updated):
            return self.manual(original, updated, LEGACY_ARGUMENTS)
        data, path = bound["data"], bound["file_or_path"]
        separator = data.comma if isinstance(data.comma, cst.Comma) else cst.Comma(whitespace_after=SPACE)
        args = [
            data.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT, comma=separator),
            path.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT, comma=updated.args[-1].comma),
        ]
        call = updated.with_changes(func=self.ctx.expr(f"{self.torch}.save"), args=args)
        review, message = SAVE_CHECK, ""
        if qname.startswith(XSER):
            review = f"{SAVE_CHECK.replace('xm.save', 'xser.save')}; {XSER_SAVE_CHECK}"
            message = "xser.save() -> torch.save() on the writing rank"
        # xm.save and xser.save ended in a rendezvous of every rank: whoever reads the file next finds it written.
        barrier = [f"if {self.dist}.is_initialized():", f"\t{self.dist}.barrier()"]
        if not master_only:
            # Every rank writes, as before; the path must differ per rank, as it had to.
            lines = [self.code_at(call, 0), *barrier]
            return Edit(self.replace_with(original, lines), review=review, message=message)
        var = "RANK" if global_master else "LOCAL_RANK"
        lines = [f"if {self.env_int(var)} == 0:", f"\t{self.code_at(call, 1)}", *barrier]
        return Edit(self.replace_with(original, lines), review=review, message=message)
