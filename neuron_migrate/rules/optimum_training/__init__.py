"""optimum-neuron training -> stock Transformers, TRL, PEFT and Accelerate on the ``neuron`` device.

optimum-neuron wrapped each Hugging Face training class for the XLA stack (``NeuronTrainer``,
``NeuronTrainingArguments``, ``NeuronSFTTrainer``, ``NeuronAccelerator``, its own model classes and
``TrainingNeuronConfig``). On TorchNeuron the stock classes run natively: the Neuron device is part of
``TrainingArguments``, ``torch_compile_backend="neuron"`` compiles the step, and tensor parallelism is a
``transformers.distributed.DistributedConfig`` given where the model is built. This module renames
the classes, maps their arguments (tables in :mod:`neuron_migrate.rules.hf_fields`) and leaves a TODO
where a Neuron-only concept has no stock counterpart.

Sources: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/torchneuron-resources.html
(the HF libraries need no Neuron layer), the optimum-neuron 0.4.5 classes, and the TrainingArguments /
SFTConfig / DistributedConfig of the transformers and TRL releases that support the neuron device.
"""

from __future__ import annotations

from neuron_migrate.rules.optimum_training.argument_field_reads import ArgumentFieldReads
from neuron_migrate.rules.optimum_training.flash_attention_default import FlashAttentionDefault
from neuron_migrate.rules.optimum_training.is_main_worker import IsMainWorker
from neuron_migrate.rules.optimum_training.is_precompilation import IsPrecompilation
from neuron_migrate.rules.optimum_training.lazy_load_for_parallelism import LazyLoadForParallelism
from neuron_migrate.rules.optimum_training.model_parallelism_helpers import ModelParallelismHelpers
from neuron_migrate.rules.optimum_training.neuron_accelerator_to_accelerate import NeuronAcceleratorToAccelerate
from neuron_migrate.rules.optimum_training.neuron_hf_argument_parser_to_hf_argument_parser import (
    NeuronHfArgumentParserToHfArgumentParser,
)
from neuron_migrate.rules.optimum_training.neuron_orpo_to_trl import NeuronOrpoToTrl
from neuron_migrate.rules.optimum_training.neuron_peft_to_peft import NeuronPeftToPeft
from neuron_migrate.rules.optimum_training.neuron_sft_config_to_sft_config import NeuronSFTConfigToSFTConfig
from neuron_migrate.rules.optimum_training.neuron_sft_trainer_to_sft_trainer import NeuronSFTTrainerToSFTTrainer
from neuron_migrate.rules.optimum_training.neuron_trainer_to_trainer import NeuronTrainerToTrainer
from neuron_migrate.rules.optimum_training.neuron_training_arguments_to_training_arguments import (
    NeuronTrainingArgumentsToTrainingArguments,
)
from neuron_migrate.rules.optimum_training.optimum_neuron_utils import OptimumNeuronUtils
from neuron_migrate.rules.optimum_training.patch_transformers_removal import PatchTransformersRemoval
from neuron_migrate.rules.optimum_training.test_decorators import TestDecorators
from neuron_migrate.rules.optimum_training.training_helpers_to_transformers import TrainingHelpersToTransformers
from neuron_migrate.rules.optimum_training.training_model_classes import TrainingModelClasses
from neuron_migrate.rules.optimum_training.training_model_from_pretrained import TrainingModelFromPretrained
from neuron_migrate.rules.optimum_training.training_startup_settings import TrainingStartupSettings
from neuron_migrate.rules.optimum_training.trn_config_attribute import TrnConfigAttribute

__all__ = [
    "ArgumentFieldReads",
    "FlashAttentionDefault",
    "IsMainWorker",
    "IsPrecompilation",
    "LazyLoadForParallelism",
    "ModelParallelismHelpers",
    "NeuronAcceleratorToAccelerate",
    "NeuronHfArgumentParserToHfArgumentParser",
    "NeuronOrpoToTrl",
    "NeuronPeftToPeft",
    "NeuronSFTConfigToSFTConfig",
    "NeuronSFTTrainerToSFTTrainer",
    "NeuronTrainerToTrainer",
    "NeuronTrainingArgumentsToTrainingArguments",
    "OptimumNeuronUtils",
    "PatchTransformersRemoval",
    "TestDecorators",
    "TrainingHelpersToTransformers",
    "TrainingModelClasses",
    "TrainingModelFromPretrained",
    "TrainingStartupSettings",
    "TrnConfigAttribute",
]
