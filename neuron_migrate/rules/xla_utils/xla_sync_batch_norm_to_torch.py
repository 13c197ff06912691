"""NM174: xf.SyncBatchNorm -> torch.nn.SyncBatchNorm"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import REVIEW, Edit, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import bind_args
from neuron_migrate.rules.xla_utils.common import DOCS_SYNC_BATCH_NORM, SYNC_BATCH_NORM_REVIEW


@register
class XlaSyncBatchNormToTorch(Rule):
    """``torch_xla.core.functions.SyncBatchNorm(num_features, eps, momentum)`` ->
    ``torch.nn.SyncBatchNorm`` with the same arguments: both average the batch statistics over all
    processes in training (DOCS_SYNC_BATCH_NORM)."""

    meta = RuleMeta(
        "NM174",
        "xf.SyncBatchNorm -> torch.nn.SyncBatchNorm",
        safety=REVIEW,
        risks=frozenset({"collectives", "numerics"}),
        summary="torch_xla's cross-replica batch norm becomes PyTorch's SyncBatchNorm.",
        docs=(DOCS_SYNC_BATCH_NORM,),
        example=Example(
            before=(
                "import torch_xla.core.functions as xf\n\n"
                "norm = xf.SyncBatchNorm(64, eps=1e-3)\n"
            ),
            after=(
                "import torch\n\n"
                f"# neuron-migrate(NM174): {SYNC_BATCH_NORM_REVIEW}\n"
                "norm = torch.nn.SyncBatchNorm(64, eps=1e-3)\n"
            ),
        ),
    )
    calls = {"torch_xla.core.functions.SyncBatchNorm": "to_torch"}

    def to_torch(self, original: cst.Call, updated: cst.Call, qname: str):
        if bind_args(updated, ("num_features", "eps", "momentum")) is None:
            self.ctx.manual(
                self.meta, original, "replace it with torch.nn.SyncBatchNorm(num_features, eps=, momentum=)"
            )
            return updated
        torch = self.ctx.require_import("torch")
        func = self.ctx.expr(f"{torch}.nn.SyncBatchNorm")
        return Edit(updated.with_changes(func=func), review=SYNC_BATCH_NORM_REVIEW)
