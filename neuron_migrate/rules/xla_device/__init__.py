"""Device selection and runtime queries: the XLA device becomes the native ``"neuron"`` device.

On TorchNeuron the device is ``torch.device("neuron")`` and ``torch.neuron`` is the device module
(it plays the role ``torch.cuda`` plays for CUDA), so ``xm.xla_device()``, the ``"xla"`` device
strings and the ``torch_xla.runtime`` queries all map onto stock PyTorch.
"""

from __future__ import annotations

from neuron_migrate.rules.xla_device.common import from_outside

__all__ = [
    "from_outside",
]
