"""Data loading and process launch: device loaders, ``xmp.spawn`` and its helpers.

``pl.MpDeviceLoader`` and ``pl.ParallelLoader`` wrapped a DataLoader, moved every batch to the XLA
device on background threads and cut the lazy graph per batch. On TorchNeuron the plain DataLoader is
iterated and each loop moves its batch with ``.to(device)``; this module finds those loops (also
through a variable, ``enumerate(...)``, or a function the loader is passed to) and adds the move.

``xmp.spawn`` / ``torch_xla.launch`` forked one process per core; TorchNeuron uses one process per
NeuronCore started by ``torchrun``, so the entry point calls the worker function directly.
"""

from __future__ import annotations
