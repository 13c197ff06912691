"""One program run as the only process of a torchrun launch, for ``audit --run`` and ``emulate``.

Migrated scripts are launched with torchrun, and read what it sets: ``init_process_group("neuron")`` reads
``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT``, the device binding ``LOCAL_RANK``. Run outside
torchrun, such a script gets the environment of a one-process launch, so that it runs as it would under
``torchrun --nproc_per_node 1``.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator

# What torchrun sets for each process.
TORCHRUN_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
NOTE = "ran as one torchrun process (RANK=0, WORLD_SIZE=1): launch under torchrun for more"


def one_process_environment() -> dict[str, str]:
    """The variables torchrun would set for a launch of one process, on a free local port; nothing when any of
    them is set already (under torchrun, or set by the user: theirs are kept)."""
    if any(name in os.environ for name in TORCHRUN_ENV):
        return {}
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1",
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}  # fmt: skip


@contextlib.contextmanager
def single_process_launch(notes: list[str]) -> Iterator[None]:
    """Inside the block this process is a one-process torchrun launch (a note says so), unless it already is
    one; everything is put back afterwards."""
    values = one_process_environment()
    if not values:
        yield
        return
    os.environ.update(values)
    notes.append(NOTE)
    try:
        yield
    finally:
        for name in values:
            os.environ.pop(name, None)
