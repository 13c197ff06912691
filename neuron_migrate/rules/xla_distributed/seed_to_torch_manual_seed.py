"""NM131: xm.set_rng_state() / torch_xla.manual_seed() -> torch.manual_seed()"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Example, RuleMeta, register
from neuron_migrate.rules.calls import bind_args
from neuron_migrate.rules.tables.xla_distributed import XM
from neuron_migrate.rules.xla_distributed.common import DOCS_MODULE, DistributedRule, without_args


# ----- NM131 / NM132: RNG ------------------------------------------------------------------------------------
@register
class SeedToTorchManualSeed(DistributedRule):
    """xm.set_rng_state(seed) / torch_xla.manual_seed(seed) -> torch.manual_seed(seed)."""

    meta = RuleMeta(
        "NM131",
        "xm.set_rng_state() / torch_xla.manual_seed() -> torch.manual_seed()",
        safety=SAFE,
        risks=frozenset({"rng"}),
        summary="torch.manual_seed seeds the CPU and every device generator, the neuron one included.",
        docs=(DOCS_MODULE, "https://pytorch.org/docs/stable/generated/torch.manual_seed.html"),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "xm.set_rng_state(args.seed)\n"
            ),
            after=(
                "import torch\n\n"
                "torch.manual_seed(args.seed)\n"
            ),
        ),
    )
    calls = {
        f"{XM}.set_rng_state": "to_manual_seed",
        "torch_xla.manual_seed": "to_manual_seed",
        "torch_xla.torch_xla.manual_seed": "to_manual_seed",
    }

    def to_manual_seed(self, original: cst.Call, updated: cst.Call, qname: str):
        bound = bind_args(updated, ("seed", "device"))
        if bound is None or "seed" not in bound:
            return self.manual(original, updated, "arguments not understood; use `torch.manual_seed(seed)`")
        # The device argument goes: torch.manual_seed seeds every device.
        call = without_args(updated, {"device"}, ("seed", "device"))
        return call.with_changes(func=self.ctx.expr(f"{self.torch}.manual_seed"))
