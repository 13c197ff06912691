"""NM126: xm.all_gather() -> dist.all_gather_single()"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import REVIEW, Edit, Example, RuleMeta, register
from neuron_migrate.rules.calls import bind_args, is_plain_reference, names_in
from neuron_migrate.rules.tables.xla_distributed import XM
from neuron_migrate.rules.xla_distributed.common import (
    DOCS_DISTRIBUTED,
    DOCS_DIST_API,
    LEGACY_ARGUMENTS,
    SUBGROUPS_STEP,
    DistributedRule,
    is_absent_or,
)


# ----- NM126: all_gather ------------------------------------------------------------------------------------
@register
class AllGatherToAllGatherSingle(DistributedRule):
    """y = xm.all_gather(x) (dim 0) -> dist.all_gather_single into a new tensor; y = xm.all_gather(x, dim=d)
    -> dist.all_gather into one part per rank, then torch.cat on d.

    PyTorch 2.13, the oldest release TorchNeuron runs on, deprecates all_gather_into_tensor in
    favour of all_gather_single (same collective, same arguments).
    """

    meta = RuleMeta(
        "NM126",
        "xm.all_gather() -> dist.all_gather_single()",
        safety=REVIEW,
        risks=frozenset({"collectives"}),
        summary=(
            "Along dim 0 the gathered tensor is every rank's tensor stacked in rank order, which is what "
            "all_gather_single writes; along another dim it is dist.all_gather's parts concatenated on that "
            "dim. Replica groups, `output=` and lists are left to a human."
        ),
        docs=(DOCS_DIST_API, DOCS_DISTRIBUTED),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "all_preds = xm.all_gather(preds)\n"
            ),
            after=(
                "import torch.distributed as dist\n\n"
                "# neuron-migrate(NM126): all_gather_single needs one tensor of the same shape on every "
                "rank (xm.all_gather also took lists)\n"
                "if dist.is_initialized():\n"
                "    all_preds = preds.new_empty((dist.get_world_size() * preds.shape[0], *preds.shape[1:]))\n"
                "    dist.all_gather_single(all_preds, preds)\n"
                "else:\n"
                "    all_preds = preds.clone()\n"
            ),
        ),
    )
    calls = {f"{XM}.all_gather": "to_all_gather_single"}
    PARAMS = ("value", "dim", "groups", "output", "pin_layout")

    def to_all_gather_single(self, original: cst.Call, updated: cst.Call, qname: str):
        fallback = (
            "gather with `parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]`, "
            "`dist.all_gather(parts, x)`, then `torch.cat(parts, dim=dim)`"
        )
        bound = bind_args(updated, self.PARAMS)
        if bound is None or "value" not in bound:
            return self.manual(original, updated, f"arguments not understood; {fallback}")
        if not is_absent_or(bound, "groups", None, []):
            return self.manual(original, updated, f"{SUBGROUPS_STEP} to dist.all_gather; {fallback}")
        if not is_absent_or(bound, "output", None):
            return self.manual(original, updated, "into `output`: `dist.all_gather_single(output, value)`")
        shape = self.shape(original)
        value = bound["value"].value
        if shape is None or shape[0] == "bare" or isinstance(value, (cst.List, cst.Tuple)):
            return self.manual(original, updated, f"not of the form `y = xm.all_gather(x)`; {fallback}")
        if self.keeps_legacy_arguments(original, updated):
            return self.manual(original, updated, LEGACY_ARGUMENTS)
        kind, target = shape
        lines = []
        if not is_plain_reference(value):
            # The input is named several times below; evaluate it once.
            local = self.fresh_name("local_tensor")
            lines.append(f"{local} = {code_of(value)}")
            source = local
        else:
            source = code_of(value)
        direct = kind == "assign" and isinstance(target, cst.Name) and target.value not in names_in(value)
        result = code_of(target) if direct else self.fresh_name("gathered")
        dim = None if is_absent_or(bound, "dim", 0) else code_of(bound["dim"].value)
        lines += [
            f"if {self.dist}.is_initialized():",
            *(self.gather_single(result, source) if dim is None else self.gather_parts(result, source, dim)),
            "else:",
            f"\t{result} = {source}.clone()",
        ]
        if not direct:
            lines.append(f"return {result}" if kind == "return" else f"{code_of(target)} = {result}")
        collective = "all_gather_single" if dim is None else "dist.all_gather"
        review = f"{collective} needs one tensor of the same shape on every rank (xm.all_gather also took lists)"
        return Edit(self.replace_with(original, lines), review=review)

    def gather_single(self, result: str, source: str) -> list[str]:
        """Along dim 0 the output is the ranks' tensors stacked in rank order: one all_gather_single."""
        dist = self.dist
        return [
            f"\t{result} = {source}.new_empty(({dist}.get_world_size() * {source}.shape[0], *{source}.shape[1:]))",
            f"\t{dist}.all_gather_single({result}, {source})",
        ]

    def gather_parts(self, result: str, source: str, dim: str) -> list[str]:
        """Along another dim: one part per rank, concatenated in rank order on ``dim``."""
        dist, torch = self.dist, self.torch
        parts = self.fresh_name("parts")
        return [
            f"\t{parts} = [{torch}.empty_like({source}) for _ in range({dist}.get_world_size())]",
            f"\t{dist}.all_gather({parts}, {source})",
            f"\t{result} = {torch}.cat({parts}, dim={dim})",
        ]
