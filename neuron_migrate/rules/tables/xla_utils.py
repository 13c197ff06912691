"""torch_xla's copy of activation checkpointing (NM173): PyTorch's own."""

from __future__ import annotations

from neuron_migrate.rules.rows import Rename, Row

CHECKPOINT = Rename("torch.utils.checkpoint.checkpoint", from_import=True)

ROWS = (Row("torch_xla.utils.checkpoint.checkpoint", "NM173", CHECKPOINT),)
