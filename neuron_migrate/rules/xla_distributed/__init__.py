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

from neuron_migrate.rules.xla_distributed.all_gather_to_all_gather_single import AllGatherToAllGatherSingle
from neuron_migrate.rules.xla_distributed.all_reduce_to_dist import AllReduceToDist
from neuron_migrate.rules.xla_distributed.collective_broadcast_to_broadcast import CollectiveBroadcastToBroadcast
from neuron_migrate.rules.xla_distributed.flash_attention_to_sdpa import FlashAttentionToSdpa
from neuron_migrate.rules.xla_distributed.fetch_gradients_to_comprehension import FetchGradientsToComprehension
from neuron_migrate.rules.xla_distributed.get_rng_state_manual import GetRngStateManual
from neuron_migrate.rules.xla_distributed.master_ordinal_from_environment import MasterOrdinalFromEnvironment
from neuron_migrate.rules.xla_distributed.master_print_to_guarded_print import MasterPrintToGuardedPrint
from neuron_migrate.rules.xla_distributed.mesh_reduce_to_all_gather_object import MeshReduceToAllGatherObject
from neuron_migrate.rules.xla_distributed.other_collectives import OtherCollectives
from neuron_migrate.rules.xla_distributed.rank_from_environment import RankFromEnvironment
from neuron_migrate.rules.xla_distributed.reduce_constant_to_reduce_op import ReduceConstantToReduceOp
from neuron_migrate.rules.xla_distributed.rendezvous_to_barrier import RendezvousToBarrier
from neuron_migrate.rules.xla_distributed.save_to_torch_save import SaveToTorchSave
from neuron_migrate.rules.xla_distributed.seed_to_torch_manual_seed import SeedToTorchManualSeed
from neuron_migrate.rules.xla_distributed.spmd_manual import SpmdManual
from neuron_migrate.rules.xla_distributed.spmd_to_device_mesh import SpmdToDeviceMesh
from neuron_migrate.rules.xla_distributed.xla_backend_to_neuron import (
    XlaBackendToNeuron,
    binds_cores,
    initialises_process_group,
)
from neuron_migrate.rules.xla_distributed.xla_fsdp_manual import XlaFsdpManual
from neuron_migrate.rules.xla_distributed.zero_redundancy_optimizer_to_stock import ZeroRedundancyOptimizerToStock

__all__ = [
    "AllGatherToAllGatherSingle",
    "AllReduceToDist",
    "CollectiveBroadcastToBroadcast",
    "FetchGradientsToComprehension",
    "FlashAttentionToSdpa",
    "GetRngStateManual",
    "MasterOrdinalFromEnvironment",
    "MasterPrintToGuardedPrint",
    "MeshReduceToAllGatherObject",
    "OtherCollectives",
    "RankFromEnvironment",
    "ReduceConstantToReduceOp",
    "RendezvousToBarrier",
    "SaveToTorchSave",
    "SeedToTorchManualSeed",
    "SpmdManual",
    "SpmdToDeviceMesh",
    "XlaBackendToNeuron",
    "XlaFsdpManual",
    "ZeroRedundancyOptimizerToStock",
    "binds_cores",
    "initialises_process_group",
]
