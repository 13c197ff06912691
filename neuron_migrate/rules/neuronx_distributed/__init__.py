"""neuronx_distributed (NxD Core / NxD Training): model surgery onto stock torch.distributed.

NxD's parallel layers, parallel_state groups, ZeRO-1 optimizer, pipeline engine, trainer helpers and
checkpoint format are end-of-support on TorchNeuron; AWS points to DTensor, FSDP2 and DDP, which
run on the ``"neuron"`` process-group backend. None of that is a rename: a tensor-parallel model is
rebuilt from plain ``nn`` layers plus a ``parallelize_module`` plan on a DeviceMesh. So every use is
marked with the concrete next step, and each file gets one summary of the whole job (NM420). Two
APIs translate directly: ``move_model_to_device`` and a ``LoraConfig`` written with peft's arguments.

NxD exports names from several module paths, so uses are matched by API name under the
``neuronx_distributed`` package, not by one exact import path.

Sources: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html,
the NxD end-of-support announcement and the PyTorch DeviceMesh / tensor-parallel / FSDP2 / DCP /
pipelining docs.
"""

from __future__ import annotations

from neuron_migrate.rules.neuronx_distributed.common import owner
from neuron_migrate.rules.neuronx_distributed.checkpoints_to_dcp import CheckpointsToDcp
from neuron_migrate.rules.neuronx_distributed.move_model_to_device import MoveModelToDevice
from neuron_migrate.rules.neuronx_distributed.nxd_inference_to_compile import NxdInferenceToCompile
from neuron_migrate.rules.neuronx_distributed.nxd_lora_to_peft import NxdLoraToPeft
from neuron_migrate.rules.neuronx_distributed.nxd_migration_plan import NxdMigrationPlan
from neuron_migrate.rules.neuronx_distributed.other_nxd_api import OtherNxdApi
from neuron_migrate.rules.neuronx_distributed.pad_model import PadModel
from neuron_migrate.rules.neuronx_distributed.parallel_cross_entropy_to_loss_parallel import (
    ParallelCrossEntropyToLossParallel,
)
from neuron_migrate.rules.neuronx_distributed.parallel_layers_to_tensor_parallel import ParallelLayersToTensorParallel
from neuron_migrate.rules.neuronx_distributed.parallel_state_to_device_mesh import ParallelStateToDeviceMesh
from neuron_migrate.rules.neuronx_distributed.pipeline_to_torch_pipelining import PipelineToTorchPipelining
from neuron_migrate.rules.neuronx_distributed.trainer_to_mesh_and_fsdp import TrainerToMeshAndFsdp
from neuron_migrate.rules.neuronx_distributed.zero1_to_fsdp2 import Zero1ToFsdp2

__all__ = [
    "CheckpointsToDcp",
    "MoveModelToDevice",
    "NxdInferenceToCompile",
    "NxdLoraToPeft",
    "NxdMigrationPlan",
    "OtherNxdApi",
    "PadModel",
    "ParallelCrossEntropyToLossParallel",
    "ParallelLayersToTensorParallel",
    "ParallelStateToDeviceMesh",
    "PipelineToTorchPipelining",
    "TrainerToMeshAndFsdp",
    "Zero1ToFsdp2",
    "owner",
]
