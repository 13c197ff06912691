"""Mixed precision: XLA autocast, sync-free optimizers and gradient scalers.

TorchNeuron supports ``torch.autocast(device_type="neuron")`` following the CUDA conventions; the
default autocast dtype for ``neuron`` is not documented, so the rewrite always states the dtype.
The sync-free optimizers existed only to avoid XLA graph breaks and become the stock ones.
"""

from __future__ import annotations
