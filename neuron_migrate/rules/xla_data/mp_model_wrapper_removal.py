"""NM143: xmp.MpModelWrapper(model) -> model"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import REVIEW, Edit, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import bind_args
from neuron_migrate.rules.tables.xla_data import XMP
from neuron_migrate.rules.xla_step.common import DOCS_DISTRIBUTED


@register
class MpModelWrapperRemoval(Rule):
    """``xmp.MpModelWrapper(model)`` -> ``model``: it only shared host memory between forked workers
   ; torchrun workers each build their model."""

    meta = RuleMeta(
        "NM143",
        "xmp.MpModelWrapper(model) -> model",
        safety=REVIEW,
        risks=frozenset({"launch"}),
        summary="Each torchrun process builds its own model; `.to(device)` on it works as before.",
        docs=(DOCS_DISTRIBUTED,),
        example=Example(
            before=(
                "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
                "WRAPPED_MODEL = xmp.MpModelWrapper(Net())\n"
            ),
            after=(
                "# neuron-migrate(NM143): MpModelWrapper removed: each torchrun process builds its own model; "
                "keep moving it with `.to(device)`\n"
                "WRAPPED_MODEL = Net()\n"
            ),
        ),
    )
    calls = {f"{XMP}.MpModelWrapper": "unwrap"}
    UNWRAPPED = "MpModelWrapper removed: each torchrun process builds its own model; keep moving it with `.to(device)`"

    def unwrap(self, original: cst.Call, updated: cst.Call, qname: str):
        args = bind_args(updated, ("model",))
        if args is None or "model" not in args:
            self.ctx.manual(self.meta, original, "use the model itself and move it with `.to(device)`")
            return updated
        return Edit(args["model"].value, review=self.UNWRAPPED)
