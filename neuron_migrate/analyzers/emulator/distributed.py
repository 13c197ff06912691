"""The ``neuron`` process-group backend on the emulator: gloo on the host payloads.

Collectives on neuron tensors reach the wrapper's dispatch like any other op (``c10d::allreduce_`` and friends),
are run on the CPU payloads, and so end up in this process group's gloo backend.

The groups are kept alive until the interpreter exits. A gloo worker drops its reference to a finished work
after the caller has seen it complete, and that last reference releases tensors with Python objects, so it
takes the GIL. ``~ProcessGroupGloo`` joins the workers, and when it runs from a Python object's deallocation
(DistributedDataParallel's reducer going away with the program's globals) it holds the GIL while joining: the
worker waits for the GIL, the main thread for the worker, and the program hangs at its end.
"""

from __future__ import annotations

import torch.distributed as dist

# every group this backend made; never destroyed mid-program (see above)
_groups: list = []


def _create(store, rank, size, timeout):
    group = dist.ProcessGroupGloo(store, rank, size, timeout)
    _groups.append(group)
    return group


def live_groups() -> bool:
    return bool(_groups)


def install() -> None:
    if not dist.is_available():
        return
    if "neuron" not in dist.Backend.backend_list:
        dist.Backend.register_backend("neuron", _create, devices=["cpu", "neuron"])
