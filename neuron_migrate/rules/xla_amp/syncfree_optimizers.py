"""NM151: syncfree optimizers -> torch.optim"""

from __future__ import annotations

from neuron_migrate.rules.base import SAFE, Example, Rule, RuleMeta, register
from neuron_migrate.rules.tables.xla_amp import ROWS
from neuron_migrate.rules.xla_amp.common import DOCS_CHANGES


@register
class SyncfreeOptimizers(Rule):
    """``torch_xla.amp.syncfree.{Adam,AdamW,SGD}`` -> ``torch.optim`` (same arguments and updates)."""

    meta = RuleMeta(
        "NM151",
        "syncfree optimizers -> torch.optim",
        safety=SAFE,
        risks=frozenset({"numerics"}),
        summary="The sync-free variants only avoided XLA graph breaks; the stock optimizers do the same math.",
        docs=(DOCS_CHANGES,),
        example=Example(
            before=(
                "import torch\n"
                "from torch_xla.amp import syncfree\n\n"
                "optimizer = syncfree.AdamW(model.parameters(), lr=1e-4)\n"
            ),
            after=(
                "import torch\n\n"
                "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)\n"
            ),
        ),
    )
    rows = ROWS
