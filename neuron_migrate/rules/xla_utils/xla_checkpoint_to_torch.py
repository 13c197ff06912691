"""NM173: XLA activation checkpointing -> torch.utils.checkpoint"""

from __future__ import annotations

from neuron_migrate.rules.base import SAFE, Example, Rule, RuleMeta, register
from neuron_migrate.rules.tables.xla_utils import ROWS
from neuron_migrate.rules.xla_utils.common import DOCS_CHECKPOINT


@register
class XlaCheckpointToTorch(Rule):
    """``torch_xla.utils.checkpoint.checkpoint`` -> ``torch.utils.checkpoint.checkpoint``: the XLA
    copy only added XLA RNG-state handling to PyTorch's (DOCS_CHECKPOINT)."""

    meta = RuleMeta(
        "NM173",
        "XLA activation checkpointing -> torch.utils.checkpoint",
        safety=SAFE,
        summary="torch_xla's copy of activation checkpointing becomes PyTorch's own.",
        docs=(DOCS_CHECKPOINT,),
        example=Example(
            before=(
                "from torch_xla.utils.checkpoint import checkpoint\n\n"
                "hidden = checkpoint(layer, hidden, use_reentrant=False)\n"
            ),
            after=(
                "import torch.utils.checkpoint\n\n"
                "hidden = torch.utils.checkpoint.checkpoint(layer, hidden, use_reentrant=False)\n"
            ),
        ),
    )
    rows = ROWS
