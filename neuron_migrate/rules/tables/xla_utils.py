"""torch_xla's copy of activation checkpointing (NM173): PyTorch's own. torch_xla's version (NM176):
torch's, which it followed."""

from __future__ import annotations

from neuron_migrate.rules.rows import Rename, Row

CHECKPOINT = Rename("torch.utils.checkpoint.checkpoint", from_import=True)

ROWS = (Row("torch_xla.utils.checkpoint.checkpoint", "NM173", CHECKPOINT),)

# torch_xla was released with the PyTorch release of the same number (torch_xla 2.1 for torch 2.1), so
# a check of its version asks which PyTorch runs, and torch's version answers that now.
VERSION_NAMES = ("torch_xla.__version__", "torch_xla.version.__version__")
VERSION = Rename(
    "torch.__version__",
    module="torch",
    note="torch_xla.__version__ -> torch.__version__: torch_xla's version was the PyTorch release it was built for",
)
