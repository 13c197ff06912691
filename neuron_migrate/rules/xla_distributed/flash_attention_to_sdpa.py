"""NM138: torch_xla flash_attention -> torch.nn.functional.scaled_dot_product_attention"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import REVIEW, Edit, Example, RuleMeta, register
from neuron_migrate.rules.calls import bind_args, name_nodes
from neuron_migrate.rules.tables.xla_distributed import CUSTOM_KERNEL, ROWS
from neuron_migrate.rules.xla_distributed.common import LEGACY_ARGUMENTS, DistributedRule, _is_legacy, is_absent_or

DOCS_SDPA = "https://pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html"
DOCS_CUSTOM_KERNEL = "https://docs.pytorch.org/xla/release/r2.9/features/pallas.html"
# torch_xla 2.9 custom_kernel.flash_attention; ab, partition_spec and mesh are keyword-only there.
PARAMS = ("q", "k", "v", "causal", "q_segment_ids", "kv_segment_ids", "sm_scale", "ab", "partition_spec", "mesh")
SEGMENTS_STEP = (
    "SDPA takes no segment ids: pass `attn_mask=q_segment_ids[:, None, :, None] == kv_segment_ids[:, None, None, :]` "
    "(and a causal mask folded into it, SDPA refuses attn_mask with is_causal)"
)
BIAS_WITH_CAUSAL = (
    "SDPA refuses attn_mask with is_causal: add the causal mask to `ab` "
    "(`ab.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float('-inf'))`) and pass it as attn_mask"
)
BIAS_WITH_SCALE = (
    "the kernel added `ab` to q·k before scaling by sm_scale, SDPA adds attn_mask after its scale: pass "
    "`attn_mask=ab * sm_scale, scale=sm_scale`"
)


@register
class FlashAttentionToSdpa(DistributedRule):
    """``flash_attention(q, k, v, causal=, sm_scale=)`` (a TPU Pallas kernel) ->
    ``F.scaled_dot_product_attention(q, k, v, is_causal=, scale=)``: the same [batch, heads, seq, head_dim]
    layout and top-left causal mask; the kernel's scale defaulted to 1.0 where SDPA's is 1/sqrt(head_dim)."""

    meta = RuleMeta(
        "NM138",
        "torch_xla flash_attention -> torch.nn.functional.scaled_dot_product_attention",
        safety=REVIEW,
        risks=frozenset({"numerics", "performance"}),
        summary=(
            "flash_attention took q, k, v as [batch, heads, seq, head_dim], as SDPA does, and `causal=True` masks "
            "the same top-left triangle as `is_causal=True`. Its `sm_scale` defaulted to 1.0 (no scaling) where "
            "SDPA's default is 1/sqrt(head_dim), so the scale is always spelled out. An additive bias `ab` "
            "becomes attn_mask when nothing scales it; partition_spec / mesh (the SPMD sharding of the kernel) go: "
            "SDPA computes on the tensors each rank holds, DTensors included. Segment ids need a mask by hand. "
            "The other Pallas kernels of torch_xla get their next step."
        ),
        docs=(DOCS_SDPA, DOCS_CUSTOM_KERNEL),
        triggers=(b"custom_kernel",),
        example=Example(
            before=(
                "from torch_xla.experimental.custom_kernel import flash_attention\n\n\n"
                "def attend(q, k, v):\n"
                "    return flash_attention(q, k, v, causal=True)\n"
            ),
            after=(
                "import torch.nn.functional as F\n\n\n"
                "def attend(q, k, v):\n"
                "    # neuron-migrate(NM138): `scale=1.0` keeps flash_attention's default sm_scale (no scaling; "
                "SDPA would scale by 1/sqrt(head_dim)); q, k, v keep their [batch, heads, seq, head_dim] layout\n"
                "    return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1.0)\n"
            ),
        ),
    )
    calls = {f"{CUSTOM_KERNEL}.flash_attention": "to_sdpa"}
    rows = ROWS

    def to_sdpa(self, original: cst.Call, updated: cst.Call, qname: str):
        bound = bind_args(updated, PARAMS)
        if bound is None or not {"q", "k", "v"} <= bound.keys():
            return self.manual(original, updated, "arguments not understood; " + self.row_step())
        if self._legacy_arguments(original):
            return self.manual(original, updated, LEGACY_ARGUMENTS)
        if not (is_absent_or(bound, "q_segment_ids", None) and is_absent_or(bound, "kv_segment_ids", None)):
            return self.manual(original, updated, SEGMENTS_STEP)
        has_bias = not is_absent_or(bound, "ab", None)
        causal = None if is_absent_or(bound, "causal", False) else bound["causal"].value
        if has_bias and causal is not None:
            return self.manual(original, updated, BIAS_WITH_CAUSAL)
        if has_bias and not is_absent_or(bound, "sm_scale", 1.0, 1):
            return self.manual(original, updated, BIAS_WITH_SCALE)
        args = [code_of(bound[name].value) for name in ("q", "k", "v")]
        if has_bias:
            args.append(f"attn_mask={code_of(bound['ab'].value)}")
        if causal is not None:
            args.append(f"is_causal={code_of(causal)}")
        scale = code_of(bound["sm_scale"].value) if "sm_scale" in bound else "1.0"
        args.append(f"scale={scale}")
        functional = self.ctx.require_import("torch.nn.functional", alias="F")
        sdpa = self.ctx.expr(f"{functional}.scaled_dot_product_attention({', '.join(args)})")
        if "sm_scale" in bound:
            review = "q, k, v keep their [batch, heads, seq, head_dim] layout; sm_scale is SDPA's scale"
        else:
            review = (
                "`scale=1.0` keeps flash_attention's default sm_scale (no scaling; SDPA would scale by "
                "1/sqrt(head_dim)); q, k, v keep their [batch, heads, seq, head_dim] layout"
            )
        if has_bias:
            review += "; `ab` is added to q·k as attn_mask"
        if not (is_absent_or(bound, "partition_spec", None) and is_absent_or(bound, "mesh", None)):
            review += "; partition_spec / mesh dropped: SDPA computes on the tensors each rank holds"
        return Edit(sdpa.with_changes(lpar=updated.lpar, rpar=updated.rpar), review=review)

    def _legacy_arguments(self, call: cst.Call) -> bool:
        """An argument naming a legacy API (``mesh=xs.get_global_mesh()``) is migrated first."""
        nodes = (node for arg in call.args for node in name_nodes(arg.value))
        return any(_is_legacy(qname) for node in nodes for qname in self.ctx.qualified_names(node))

    @staticmethod
    def row_step() -> str:
        return (
            "use `torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm_scale)` "
            "(sm_scale defaulted to 1.0)"
        )
