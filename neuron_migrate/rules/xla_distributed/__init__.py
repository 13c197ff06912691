"""Distributed: ranks, collectives, the process group, checkpoints, seeding, SPMD and XLA FSDP.

PyTorch/XLA had its own rank queries, collectives and sharding APIs. On TorchNeuron the stock
``torch.distributed`` API runs over the ``"neuron"`` process-group backend, one process per
NeuronCore launched by torchrun, which also sets ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK``.

Every replacement keeps a migrated single-process script runnable with plain ``python script.py``:
ranks are read from the environment with torchrun's values as defaults (never an unguarded
``dist.get_rank()``), and collectives run only when a process group exists. With one process a
collective is the identity, which is what PyTorch/XLA did with a world size of 1.

Sources: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html
and the torch_xla 2.9 ``xla_model`` / ``runtime`` signatures.
"""

from __future__ import annotations

from neuron_migrate.rules.xla_distributed.xla_backend_to_neuron import binds_cores, initialises_process_group

__all__ = [
    "binds_cores",
    "initialises_process_group",
]
