"""``torch_xla.amp.autocast`` as torch_xla 2.9 has it (torch_xla/amp/autocast_mode.py)."""

import warnings

import torch

from torch_xla import _autocast
from torch_xla.core import xla_model as xm


class autocast(_autocast.autocast):
    """bfloat16 autocast on TPU and Neuron only. On any other PJRT device 2.9 prints a warning and skips the
    base initialiser, so entering the context raises AttributeError ('autocast' object has no attribute
    'device'): a legacy script that autocasts this way does not run on XLA:CPU."""

    def __init__(self, device, enabled=True, dtype=None, cache_enabled=True):
        assert "xla" in str(device) or _stands_for_xla(device), "torch_xla.autocast is available for XLA:TPU"
        self._enabled = enabled
        self._xla_device = xm.xla_device_hw(device)
        if self._xla_device not in ("TPU", "NEURON"):
            print("Warning: AMP only supported for XLA:TPU. Ignoring autocast.")
            return
        if dtype is None:
            dtype = torch.bfloat16
        if dtype != torch.bfloat16:
            warnings.warn("In XLA:TPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                          "TPU Autocast only supports dtype of torch.bfloat16 currently.")
            enabled = False
        self._dtype = dtype
        super().__init__("xla", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


def _stands_for_xla(device):
    # The double's XLA device is the CPU device.
    return torch.device(device) == xm.xla_device()
