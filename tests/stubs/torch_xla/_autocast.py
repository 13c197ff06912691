"""``torch.autocast("xla", ...)`` for the double's XLA tensors, which are CPU tensors.

On a real XLA device (CPU, TPU or Neuron PJRT alike) the AutocastXLA dispatch key casts matmuls and
convolutions to bfloat16. The double's tensors never carry that key, so an "xla" autocast becomes a CPU
one: same dtype, CPU autocast op lists (close to, not the same as, the XLA lists).
"""

import torch

_TORCH_AUTOCAST = torch.amp.autocast_mode.autocast


class autocast(_TORCH_AUTOCAST):
    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        super().__init__("cpu" if device_type == "xla" else device_type, dtype=dtype, enabled=enabled,
                         cache_enabled=cache_enabled)


def install():
    torch.autocast = autocast
    torch.amp.autocast = autocast
