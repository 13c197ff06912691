"""NM134: xm.collective_broadcast() -> dist.broadcast()"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import REVIEW, Edit, Example, RuleMeta, register
from neuron_migrate.rules.calls import bind_args, receiver
from neuron_migrate.rules.tables.xla_distributed import XM
from neuron_migrate.rules.xla_distributed.common import (
    BROADCAST_IN_PLACE,
    DOCS_DISTRIBUTED,
    DOCS_DIST_API,
    LEGACY_ARGUMENTS,
    SKIPPED_UNINITIALIZED,
    DistributedRule,
    is_absent_or,
)


@register
class CollectiveBroadcastToBroadcast(DistributedRule):
    """xm.collective_broadcast(tensors, root_ordinal=r) -> dist.broadcast(t, src=r) for each tensor."""

    meta = RuleMeta(
        "NM134",
        "xm.collective_broadcast() -> dist.broadcast()",
        safety=REVIEW,
        risks=frozenset({"collectives"}),
        summary=(
            "collective_broadcast overwrote each tensor of the list with the root replica's values, in place "
            "(zeroing the others and summing); dist.broadcast copies the root rank's tensor the same way."
        ),
        docs=(DOCS_DIST_API, DOCS_DISTRIBUTED),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "xm.collective_broadcast([seed], root_ordinal=0)\n"
            ),
            after=(
                "import torch.distributed as dist\n\n"
                "# neuron-migrate(NM134): skipped while no process group is initialized: init it first\n"
                "if dist.is_initialized():\n"
                "    dist.broadcast(seed, src=0)\n"
            ),
        ),
    )
    calls = {f"{XM}.collective_broadcast": "to_broadcast"}
    PARAMS = ("tensors", "root_ordinal", "groups", "pin_layout")

    def to_broadcast(self, original: cst.Call, updated: cst.Call, qname: str):
        bound = bind_args(updated, self.PARAMS)
        if bound is None or "tensors" not in bound:
            return self.manual(original, updated, f"arguments not understood; {BROADCAST_IN_PLACE}")
        if not is_absent_or(bound, "groups", None, []):
            return self.manual(
                original,
                updated,
                "replica groups: build each with `dist.new_group(ranks)` and pass this rank's as `group=` "
                f"(`src` stays the global rank root_ordinal); {BROADCAST_IN_PLACE}",
            )
        if self.shape(original) != ("bare", None):
            return self.manual(original, updated, f"its value (None) is used; {BROADCAST_IN_PLACE}")
        if self.keeps_legacy_arguments(original, updated):
            return self.manual(original, updated, LEGACY_ARGUMENTS)
        # Without groups the root ordinal is the global rank.
        root = code_of(bound["root_ordinal"].value) if "root_ordinal" in bound else "0"
        tensors = bound["tensors"].value
        dist = self.dist
        elements = tensors.elements if isinstance(tensors, (cst.List, cst.Tuple)) else None
        if elements is not None and len(elements) == 1 and not isinstance(elements[0], cst.StarredElement):
            tensor = receiver(elements[0].value)
            lines = [f"if {dist}.is_initialized():", f"\t{dist}.broadcast({tensor}, src={root})"]
            return Edit(self.replace_with(original, lines), review=SKIPPED_UNINITIALIZED)
        tensor = self.fresh_name("tensor")
        check = "" if elements is not None else "the in-place loop assumes a list of tensors; "
        lines = [
            f"if {dist}.is_initialized():",
            f"\tfor {tensor} in {self.code_at(tensors, 1)}:",
            f"\t\t{dist}.broadcast({tensor}, src={root})",
        ]
        return Edit(self.replace_with(original, lines), review=check + SKIPPED_UNINITIALIZED)
