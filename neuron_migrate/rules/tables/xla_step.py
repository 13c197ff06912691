"""The lazy/eager switches of torch_xla (NM115): TorchNeuron is always eager, so the calls go."""

from __future__ import annotations

from neuron_migrate.rules.rows import Remove, rows_for_names

LAZY_TOGGLES = (
    "torch_xla.core.xla_model.unlazy",
    "torch_xla.experimental.eager_mode",
    "torch_xla.experimental.eager.eager_mode",
    # What eager_mode() calls; some scripts flip it directly.
    "torch_xla._XLAC._set_use_eager_mode",
)

ROWS = rows_for_names("NM115", LAZY_TOGGLES, Remove(fallback="drop the call; TorchNeuron is always eager"))
