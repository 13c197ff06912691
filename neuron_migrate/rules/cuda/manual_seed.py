"""NM604: torch.cuda.manual_seed(_all) -> torch.manual_seed"""

from __future__ import annotations

from neuron_migrate.rules.base import REVIEW, Example, RuleMeta, register
from neuron_migrate.rules.cuda.common import DOCS_ACCELERATOR, CudaRule
from neuron_migrate.rules.tables.cuda import ROWS, SEED_REVIEW


@register
class ManualSeed(CudaRule):
    """``torch.cuda.manual_seed(s)`` / ``manual_seed_all(s)`` -> ``torch.manual_seed(s)``, which seeds every
    device, the neuron device included; it reseeds the CPU generator too, hence the review."""

    meta = RuleMeta(
        "NM604",
        "torch.cuda.manual_seed(_all) -> torch.manual_seed",
        safety=REVIEW,
        risks=frozenset({"rng"}),
        summary="The CUDA seed becomes torch.manual_seed, which seeds the CPU and every device.",
        docs=(DOCS_ACCELERATOR,),
        triggers=(b"manual_seed",),
        example=Example(
            before="import torch\n\ntorch.cuda.manual_seed_all(1234)\n",
            after=f"import torch\n\n# neuron-migrate(NM604): {SEED_REVIEW}\ntorch.manual_seed(1234)\n",
        ),
    )
    rows = ROWS
