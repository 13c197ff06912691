"""The ``neuron`` process-group backend on the emulator: gloo on the host payloads.

Collectives on neuron tensors reach the wrapper's dispatch like any other op (``c10d::allreduce_`` and friends),
are run on the CPU payloads, and so end up in this process group's gloo backend.
"""

from __future__ import annotations

import torch.distributed as dist


def _create(store, rank, size, timeout):
    return dist.ProcessGroupGloo(store, rank, size, timeout)


def install() -> None:
    if not dist.is_available():
        return
    if "neuron" not in dist.Backend.backend_list:
        dist.Backend.register_backend("neuron", _create, devices=["cpu", "neuron"])
