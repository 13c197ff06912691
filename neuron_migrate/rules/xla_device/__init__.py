"""Device selection and runtime queries: the XLA device becomes the native ``"neuron"`` device.

On TorchNeuron the device is ``torch.device("neuron")`` and ``torch.neuron`` is the device module
(it plays the role ``torch.cuda`` plays for CUDA), so ``xm.xla_device()``, the ``"xla"`` device
strings and the ``torch_xla.runtime`` queries all map onto stock PyTorch.
"""

from __future__ import annotations

from neuron_migrate.rules.xla_device.accelerate_xla_check import AccelerateXlaCheck
from neuron_migrate.rules.xla_device.common import from_outside
from neuron_migrate.rules.xla_device.initialize_cache_to_env import InitializeCacheToEnv
from neuron_migrate.rules.xla_device.is_xla_tensor import IsXlaTensor
from neuron_migrate.rules.xla_device.legacy_device_name_accepted import LegacyDeviceNameAccepted
from neuron_migrate.rules.xla_device.runtime_device_queries import RuntimeDeviceQueries
from neuron_migrate.rules.xla_device.xla_device_string import XlaDeviceString
from neuron_migrate.rules.xla_device.xla_device_to_neuron import XlaDeviceToNeuron

__all__ = [
    "AccelerateXlaCheck",
    "InitializeCacheToEnv",
    "IsXlaTensor",
    "LegacyDeviceNameAccepted",
    "RuntimeDeviceQueries",
    "XlaDeviceString",
    "XlaDeviceToNeuron",
    "from_outside",
]
