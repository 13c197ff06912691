"""NM124: xm.mesh_reduce() -> dist.all_gather_object() + reduce_fn"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import REVIEW, Edit, Example, RuleMeta, register
from neuron_migrate.rules.calls import bind_args, receiver
from neuron_migrate.rules.tables.xla_distributed import XM
from neuron_migrate.rules.xla_distributed.common import (
    DOCS_DISTRIBUTED,
    DOCS_DIST_API,
    LEGACY_ARGUMENTS,
    DistributedRule,
)


# ----- NM124: mesh_reduce --------------------------------------------------------------------------------
@register
class MeshReduceToAllGatherObject(DistributedRule):
    """x = xm.mesh_reduce(tag, data, reduce_fn) -> dist.all_gather_object + reduce_fn."""

    meta = RuleMeta(
        "NM124",
        "xm.mesh_reduce() -> dist.all_gather_object() + reduce_fn",
        safety=REVIEW,
        risks=frozenset({"collectives"}),
        summary=(
            "mesh_reduce gathered every rank's copy of `data` (tensors moved to CPU first) and applied "
            "reduce_fn to the list; all_gather_object does the gather without the CPU move."
        ),
        docs=(DOCS_DIST_API, DOCS_DISTRIBUTED),
        example=Example(
            before=(
                "import numpy as np\n"
                "import torch_xla.core.xla_model as xm\n\n"
                'accuracy = xm.mesh_reduce("accuracy", correct / total, np.mean)\n'
            ),
            after=(
                "import numpy as np\n"
                "import torch.distributed as dist\n\n"
                "# neuron-migrate(NM124): mesh_reduce moved tensors to CPU before reduce_fn, all_gather_object "
                "does not: check reduce_fn\n"
                "if dist.is_initialized():\n"
                "    gathered = [None] * dist.get_world_size()\n"
                "    dist.all_gather_object(gathered, correct / total)\n"
                "    accuracy = np.mean(gathered)\n"
                "else:\n"
                "    accuracy = np.mean([correct / total])\n"
            ),
        ),
    )
    calls = {f"{XM}.mesh_reduce": "to_all_gather_object"}

    def to_all_gather_object(self, original: cst.Call, updated: cst.Call, qname: str):
        fallback = (
            "write `parts = [None] * dist.get_world_size()`, `dist.all_gather_object(parts, data)`, "
            "then use `reduce_fn(parts)`"
        )
        bound = bind_args(updated, ("tag", "data", "reduce_fn"))
        shape = self.shape(original)
        if bound is None or "data" not in bound or "reduce_fn" not in bound:
            return self.manual(original, updated, f"arguments not understood; {fallback}")
        if shape is None or shape[0] == "bare":
            return self.manual(original, updated, f"its value is not assigned or returned; {fallback}")
        if self.keeps_legacy_arguments(original, updated):
            return self.manual(original, updated, LEGACY_ARGUMENTS)
        kind, target = shape
        store = "return " if kind == "return" else f"{code_of(target)} = "
        data = self.code_at(bound["data"].value, 1)
        reduce_fn = receiver(bound["reduce_fn"].value)
        gathered = self.fresh_name("gathered")
        dist = self.dist
        lines = [
            f"if {dist}.is_initialized():",
            f"\t{gathered} = [None] * {dist}.get_world_size()",
            f"\t{dist}.all_gather_object({gathered}, {data})",
            f"\t{store}{reduce_fn}({gathered})",
            "else:",
            f"\t{store}{reduce_fn}([{data}])",
        ]
        review = "mesh_reduce moved tensors to CPU before reduce_fn, all_gather_object does not: check reduce_fn"
        return Edit(self.replace_with(original, lines), review=review)
