"""NM611: CUDA GradScaler needs a decision"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.cuda.common import DOCS_AMP, DOCS_BF16, CudaRule, legacy_owned
from neuron_migrate.rules.xla_amp.common import GRAD_SCALERS

SCALER_STEP = (
    "bf16 autocast needs no loss scaling: once the autocast is bfloat16, delete the scaler and call "
    "loss.backward() and optimizer.step() directly (fp16 loss scaling on the neuron device is unverified)"
)


@register
class GradScaler(CudaRule):
    """A ``GradScaler`` of CUDA code: not rewritten. The scaler's calls are spread over the training loop
    (``scale``, ``unscale_``, ``step``, ``update``, its state in checkpoints), so the TODO on its creation says
    what to do once the autocast is bf16 (NM610). Files with torch_xla imports are NM152's."""

    meta = RuleMeta(
        "NM611",
        "CUDA GradScaler needs a decision",
        safety=MANUAL,
        risks=frozenset({"numerics"}),
        summary="bf16 needs no loss scaling; the scaler and its calls are left for a human to remove.",
        docs=(DOCS_BF16, DOCS_AMP),
        triggers=(b"GradScaler",),
        example=Example(
            before="import torch\n\nscaler = torch.cuda.amp.GradScaler()\n",
            after=f"import torch\n\n# TODO(neuron-migrate NM611): {SCALER_STEP}\nscaler = torch.cuda.amp.GradScaler()\n",
        ),
    )
    calls = {qname: "flag_scaler" for qname in GRAD_SCALERS if qname.startswith("torch.")}

    def flag_scaler(self, original: cst.Call, updated: cst.Call, qname: str):
        if not legacy_owned(self.ctx, "NM152"):
            self.ctx.manual(self.meta, original, SCALER_STEP)
        return updated
