"""NM152: GradScaler in XLA code needs a decision"""

from __future__ import annotations

import libcst as cst

from neuron_migrate import markers
from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.xla_amp.common import DOCS_BF16, DOCS_CHANGES, GRAD_SCALERS, _uses_torch_xla


@register
class GradScalerWithXla(Rule):
    """Loss scaling in XLA code: not rewritten (DOCS_BF16: bf16 is the documented precision)."""

    meta = RuleMeta(
        "NM152",
        "GradScaler in XLA code needs a decision",
        safety=MANUAL,
        risks=frozenset({"numerics"}),
        summary="bf16 needs no loss scaling; whether fp16 loss scaling works on neuron is unverified.",
        docs=(DOCS_BF16, DOCS_CHANGES),
        example=Example(
            before=(
                "import torch_xla.amp\n\n"
                "scaler = torch_xla.amp.GradScaler()\n"
            ),
            after=(
                "import torch_xla.amp\n\n"
                "# TODO(neuron-migrate NM152): bf16 needs no loss scaling: delete the scaler and call "
                "loss.backward() and optimizer.step() directly (fp16 scaling on neuron is unverified)\n"
                "scaler = torch_xla.amp.GradScaler()\n"
            ),
        ),
    )
    calls = {qname: "flag_scaler" for qname in GRAD_SCALERS}

    def flag_scaler(self, original: cst.Call, updated: cst.Call, qname: str):
        marked = markers.mentions(self.ctx.text, "NM152", todo_only=True)
        if qname.startswith("torch.") and not (_uses_torch_xla(self.ctx) or marked):
            # A torch GradScaler matters only in XLA code. After a rewrite the torch_xla imports are gone,
            # but this rule's marker says the file was XLA code: saying it again keeps a rerun a fixpoint.
            return updated
        self.ctx.manual(
            self.meta,
            original,
            "bf16 needs no loss scaling: delete the scaler and call loss.backward() and optimizer.step() "
            "directly (fp16 scaling on neuron is unverified)",
        )
        return updated
