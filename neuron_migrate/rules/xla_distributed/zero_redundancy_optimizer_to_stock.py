"""NM139: torch_xla's ZeroRedundancyOptimizer -> torch.distributed.optim.ZeroRedundancyOptimizer"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import REVIEW, Edit, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import literal, with_args
from neuron_migrate.rules.xla_distributed.common import DOCS_CHANGES

XLA_ZERO = "torch_xla.distributed.zero_redundancy_optimizer.ZeroRedundancyOptimizer"
STOCK_ZERO = "torch.distributed.optim.ZeroRedundancyOptimizer"
# torch_xla 2.9's keywords that the stock class does not take; every other keyword is the wrapped
# optimizer's (lr, betas, ...), passed on as they were.
XLA_ONLY = (
    "optimizer_dtype",
    "grad_clipping",
    "max_norm",
    "pin_layout",
    "grad_norm_type",
    "lazy_init",
    "coalesce_cc",
    "save_master_weights",
    "use_grad_acc_hook",
    "higher_cc_precision",
    "bucket_cap_mb_all_gather",
    "bucket_cap_mb_reduce_scatter",
)
DOCS_ZERO = "https://pytorch.org/docs/stable/distributed.optim.html#torch.distributed.optim.ZeroRedundancyOptimizer"


@register
class ZeroRedundancyOptimizerToStock(Rule):
    """torch_xla's ZeRO-1 optimizer wrapper -> PyTorch's own, which shards the optimizer state over the ranks of
    the default process group. torch_xla's also clipped the gradient norm inside step() (``grad_clipping=True``,
    ``max_norm`` 1.0 unless given): the stock one does not, so the review marker says what to call before the
    step."""

    meta = RuleMeta(
        "NM139",
        "torch_xla ZeroRedundancyOptimizer -> torch.distributed.optim.ZeroRedundancyOptimizer",
        safety=REVIEW,
        risks=frozenset({"numerics", "collectives", "checkpoint-format"}),
        summary=(
            "PyTorch's ZeroRedundancyOptimizer shards the optimizer state over the ranks of the neuron process "
            "group; torch_xla's XLA-only options go, and its built-in gradient clipping becomes a call to make "
            "before optimizer.step()."
        ),
        docs=(DOCS_ZERO, DOCS_CHANGES),
        example=Example(
            before=(
                "import torch\n"
                "from torch_xla.distributed.zero_redundancy_optimizer import ZeroRedundancyOptimizer\n\n"
                "optimizer = ZeroRedundancyOptimizer(model.parameters(), torch.optim.AdamW, lr=1e-4, pin_layout=False)\n"
            ),
            after=(
                "import torch\n"
                "import torch.distributed.optim\n\n"
                "# neuron-migrate(NM139): PyTorch's ZeroRedundancyOptimizer does not clip gradients: call "
                "`torch.nn.utils.clip_grad_norm_(params, 1.0)` before optimizer.step(), as torch_xla's did "
                "(grad_clipping=True); it needs the neuron process group started; save its state after "
                "`optimizer.consolidate_state_dict()`; pin_layout dropped (XLA only)\n"
                "optimizer = torch.distributed.optim.ZeroRedundancyOptimizer(model.parameters(), torch.optim.AdamW, lr=1e-4)\n"
            ),
        ),
    )
    calls = {XLA_ZERO: "to_stock"}
    references = {XLA_ZERO: "class_reference", f"{XLA_ZERO}._clip_grad_norm": "clipping_hook"}
    PARAMS = ("params", "optimizer_class")

    def to_stock(self, original: cst.Call, updated: cst.Call, qname: str):
        if any(arg.star for arg in updated.args):
            self.ctx.manual(
                self.meta, original, self._step("the options are spread: pass PyTorch's the wrapped optimizer's own")
            )
            return updated
        keywords = {arg.keyword.value: arg for arg in updated.args if arg.keyword is not None}
        if "sharding_groups" in keywords:
            self.ctx.manual(self.meta, original, self._step(
                "sharding_groups: create the group once with `dist.new_subgroups_by_enumeration(groups)` and pass "
                "`process_group=` instead"
            ))
            return updated
        dropped = [name for name in XLA_ONLY if name in keywords]
        args = [arg for arg in updated.args if arg.keyword is None or arg.keyword.value not in XLA_ONLY]
        call = with_args(updated, args).with_changes(func=self.ctx.expr(self._stock_name()))
        return Edit(call, review=self._review(keywords, dropped))

    def class_reference(self, original, updated, qname: str):
        return Edit(self.ctx.expr(self._stock_name()), safe=True)

    def clipping_hook(self, original, updated, qname: str):
        self.ctx.manual(
            self.meta,
            original,
            "PyTorch's ZeroRedundancyOptimizer has no _clip_grad_norm to replace: clip the gradients yourself with "
            "`torch.nn.utils.clip_grad_norm_(params, max_norm)` before optimizer.step(), then delete this line",
        )
        return updated

    def _stock_name(self) -> str:
        return self.ctx.require_from_import("torch.distributed.optim", "ZeroRedundancyOptimizer")

    @staticmethod
    def _review(keywords: dict[str, cst.Arg], dropped: list[str]) -> str:
        clipping = keywords.get("grad_clipping")
        parts = []
        if clipping is None or literal(clipping.value) is not False:
            norm = keywords.get("max_norm")
            value = "1.0" if norm is None or literal(norm.value) is None else _code(norm.value)
            when = " when that was on" if clipping is not None and literal(clipping.value) is not True else ""
            parts.append(
                f"PyTorch's ZeroRedundancyOptimizer does not clip gradients: call "
                f"`torch.nn.utils.clip_grad_norm_(params, {value})` before optimizer.step(), as torch_xla's did "
                f"(grad_clipping=True){when}"
            )
        parts.append(
            "it needs the neuron process group started; save its state after `optimizer.consolidate_state_dict()`"
        )
        rest = [name for name in dropped if name not in ("grad_clipping", "max_norm", "grad_norm_type")]
        if rest:
            parts.append(f"{', '.join(rest)} dropped (XLA only)")
        return "; ".join(parts)

    @staticmethod
    def _step(detail: str) -> str:
        return f"use torch.distributed.optim.ZeroRedundancyOptimizer (or FSDP2's fully_shard); {detail}"


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)
