"""The entry points of the neuronx_distributed rules: the code that drives several of them."""

from __future__ import annotations

from neuron_migrate.rules.neuronx_distributed.checkpoints_to_dcp import CheckpointsToDcp
from neuron_migrate.rules.neuronx_distributed.common import NxdRule
from neuron_migrate.rules.neuronx_distributed.move_model_to_device import MoveModelToDevice
from neuron_migrate.rules.neuronx_distributed.nxd_inference_to_compile import NxdInferenceToCompile
from neuron_migrate.rules.neuronx_distributed.nxd_lora_to_peft import NxdLoraToPeft
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

NXD_RULES: tuple[type[NxdRule], ...] = (
    ParallelStateToDeviceMesh,
    ParallelLayersToTensorParallel,
    ParallelCrossEntropyToLossParallel,
    MoveModelToDevice,
    PadModel,
    CheckpointsToDcp,
    PipelineToTorchPipelining,
    Zero1ToFsdp2,
    TrainerToMeshAndFsdp,
    NxdLoraToPeft,
    NxdInferenceToCompile,
    OtherNxdApi,
)
