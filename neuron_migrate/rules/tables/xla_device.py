"""torch_xla runtime queries a table answers (NM104): the device-type switch and get_memory_info."""

from __future__ import annotations

from neuron_migrate.rules.rows import Manual, Remove, Row

ROWS = (
    Row(
        "torch_xla.runtime.set_device_type",
        "NM104",
        Remove(
            note="xr.set_device_type() removed: neuron is the only device type",
            fallback="delete the call; TorchNeuron has a single device type",
        ),
    ),
    Row(
        "torch_xla.core.xla_model.get_memory_info",
        "NM104",
        Manual("read memory use from torch.neuron.memory_stats() instead; its keys differ from get_memory_info()"),
    ),
)
