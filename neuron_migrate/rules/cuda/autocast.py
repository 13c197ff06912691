"""NM610: CUDA autocast -> bf16 autocast on the accelerator"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import REVIEW, Edit, Example, RuleMeta, register
from neuron_migrate.rules.calls import bind_args, keyword_arg, literal, new_keyword
from neuron_migrate.rules.cuda.common import DOCS_AMP, DOCS_BF16, CudaRule, accelerator_type, cuda_string, legacy_owned
from neuron_migrate.rules.xla_amp.common import AUTOCAST_PARAMS, CUDA_AUTOCAST_CALLS, _respaced

# Autocast entry points with a device parameter, and the torch.cuda.amp one that is always "cuda".
_CALLS = {qname: params for qname, params in AUTOCAST_PARAMS.items() if not qname.startswith("torch_xla")}
_HALF = frozenset({"torch.float16", "torch.half"})
BF16_REVIEW = (
    "float16 autocast made bfloat16, the neuron device's mixed precision (no loss scaling needed); "
    "on a GPU bfloat16 needs an Ampere or later card"
)
BF16_ADDED = 'dtype made explicit as bfloat16 (a "cuda" autocast defaulted to float16, which needs loss scaling)'


@register
class Autocast(CudaRule):
    """``torch.cuda.amp.autocast(...)``, ``torch.autocast("cuda", ...)``, ``torch.amp.autocast(device_type="cuda")``
    -> ``torch.autocast(device_type=<the accelerator's type>, dtype=torch.bfloat16, ...)``. A float16 dtype
    (or none: "cuda" defaulted to float16) becomes bfloat16 (DOCS_BF16); a dtype held in a variable is kept, and
    an autocast whose device is a variable is left as it is. Files with torch_xla imports are NM150's."""

    meta = RuleMeta(
        "NM610",
        "CUDA autocast -> bf16 autocast on the accelerator",
        safety=REVIEW,
        risks=frozenset({"numerics"}),
        summary=(
            'A "cuda" autocast targets the accelerator (neuron on Trainium) with bfloat16, where it was float16 or '
            "left to the default."
        ),
        docs=(DOCS_AMP, DOCS_BF16),
        triggers=(b"autocast",),
        example=Example(
            before=(
                "import torch\n\n"
                "with torch.cuda.amp.autocast():\n"
                "    loss = model(batch)\n"
            ),
            after=(
                "import torch\n\n"
                f"# neuron-migrate(NM610): {BF16_ADDED}\n"
                "with torch.autocast(device_type=torch.accelerator.current_accelerator().type, dtype=torch.bfloat16):\n"
                "    loss = model(batch)\n"
            ),
        ),
    )
    calls = {qname: "to_accelerator" for qname in _CALLS}
    # ``from torch.cuda.amp import autocast`` goes once nothing reads it
    retired_imports = ("torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode")

    def to_accelerator(self, original: cst.Call, updated: cst.Call, qname: str):
        if legacy_owned(self.ctx, "NM150"):
            return updated  # XLA code's "cuda" autocast meant the XLA device: NM150 decides
        params = _CALLS[qname]
        bound = bind_args(updated, params)
        if bound is None:
            return updated
        cuda_only = qname in CUDA_AUTOCAST_CALLS
        device_param = None if cuda_only else params[0]
        device = bound.get(device_param) if device_param else None
        if not cuda_only and (device is None or cuda_string(device.value) is None):
            return updated
        torch = self.ctx.require_import("torch")
        device_type = new_keyword("device_type", accelerator_type(self.ctx))
        dtype = bound.get("dtype")
        review = ""
        if dtype is None:
            review = BF16_ADDED
            dtype = cst.Arg(self.ctx.expr(f"{torch}.bfloat16"))
        elif self._is_half(bind_args(original, params).get("dtype")):
            review = BF16_REVIEW
            dtype = dtype.with_changes(value=self.ctx.expr(f"{torch}.bfloat16"))
        rest = [keyword_arg(arg, name) for name, arg in bound.items() if name not in (device_param, "dtype")]
        args = _respaced([keyword_arg(device_type, "device_type"), keyword_arg(dtype, "dtype"), *rest], updated.args)
        func = self.ctx.expr(f"{torch}.autocast") if cuda_only else updated.func
        return Edit(updated.with_changes(func=func, args=args), review=review, safe=not review)

    def _is_half(self, arg: cst.Arg | None) -> bool:
        """Is the original call's dtype float16 (read on the original node, whose names resolve)?"""
        if arg is None:
            return False
        return literal(arg.value) == "float16" or bool(self.ctx.qualified_names(arg.value) & _HALF)
