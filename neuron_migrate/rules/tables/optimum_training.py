"""optimum-neuron training-side names a table answers: the classes with a stock twin (NM201-NM208),
training model classes used directly (NM212), model-parallel helpers (NM215), the
get_model_param_count twin (NM220), patch_transformers_for_neuron_sdk (NM216) and the internal
helpers of optimum.neuron.utils (NM229)."""

from __future__ import annotations

from neuron_migrate.rules.optimum_names import optimum_names, with_methods
from neuron_migrate.rules.rows import Manual, Remove, Rename, Row, rows_for_names

TRAINING_MODELS_PACKAGE = "models.training"


def _stock_twin(rule: str, legacy: str, stock: str, *modules: str, top_level: bool = True) -> tuple[Row, ...]:
    """Every import path of ``legacy`` renamed to the dotted ``stock`` name, imported from its module."""
    rename = Rename(stock, note=f"{legacy} -> {stock}", from_import=True)
    return rows_for_names(rule, optimum_names(legacy, *modules, top_level=top_level), rename)


# optimum-neuron classes and functions with a stock twin. A rule whose call needs more than the new
# name (keyword arguments to map) reads its twin from here; a plain rename is the row alone.
STOCK_TWINS = (
    *_stock_twin("NM201", "NeuronTrainer", "transformers.Trainer", "trainers", "trainers.transformers", "trainers.trainers"),
    *_stock_twin("NM201", "Seq2SeqNeuronTrainer", "transformers.Seq2SeqTrainer", "trainers", "trainers.trainers"),
    *_stock_twin(
        "NM202",
        "NeuronTrainingArguments",
        "transformers.TrainingArguments",
        "trainers",
        "trainers.training_args",
        "training_args",
    ),
    *_stock_twin("NM202", "Seq2SeqNeuronTrainingArguments", "transformers.Seq2SeqTrainingArguments", "training_args"),
    *_stock_twin("NM203", "NeuronSFTTrainer", "trl.SFTTrainer", "trainers", "trainers.sft_trainer", "trainers.trainers"),
    *_stock_twin(
        "NM204",
        "NeuronSFTConfig",
        "trl.SFTConfig",
        "trainers",
        "trainers.sft_config",
        "trainers.trl_utils",
        "utils.trl_utils",
    ),
    # TRL 0.25 moved ORPO to trl.experimental.orpo; NM205 imports from plain trl where the installed TRL is older.
    *_stock_twin(
        "NM205",
        "NeuronORPOTrainer",
        "trl.experimental.orpo.ORPOTrainer",
        "trainers",
        "trainers.trainers",
        "trainers.orpo_trainer",
    ),
    *_stock_twin(
        "NM205",
        "NeuronORPOConfig",
        "trl.experimental.orpo.ORPOConfig",
        "trainers",
        "trainers.trl_utils",
        "utils.trl_utils",
    ),
    *_stock_twin("NM206", "NeuronHfArgumentParser", "transformers.HfArgumentParser", "hf_argparser"),
    *_stock_twin("NM207", "NeuronAccelerator", "accelerate.Accelerator", "accelerate", "accelerate.accelerator"),
    *_stock_twin(
        "NM207", "NeuronAcceleratorState", "accelerate.state.AcceleratorState", "accelerate", "accelerate.state"
    ),
    *_stock_twin("NM207", "NeuronPartialState", "accelerate.PartialState", "accelerate", "accelerate.state"),
    *_stock_twin(
        "NM208",
        "get_peft_model",
        "peft.get_peft_model",
        "peft",
        "peft.mapping_func",
        "utils",
        "utils.peft_utils",
        top_level=False,
    ),
    *_stock_twin("NM208", "NeuronPeftModel", "peft.PeftModel", "peft", "peft.peft_model", top_level=False),
    *_stock_twin(
        "NM208", "NeuronPeftModelForCausalLM", "peft.PeftModelForCausalLM", "peft", "peft.peft_model", top_level=False
    ),
)

# optimum.neuron.models.training: its model classes and their stock transformers counterparts.
TRAINING_MODELS = {
    "NeuronModelForCausalLM": ("AutoModelForCausalLM", ("models.training.modeling_auto",)),
    "LlamaForCausalLM": ("LlamaForCausalLM", ("models.training.llama", "models.training.llama.modeling_llama")),
    "Qwen3ForCausalLM": ("Qwen3ForCausalLM", ("models.training.qwen3", "models.training.qwen3.modeling_qwen3")),
    "GraniteForCausalLM": (
        "GraniteForCausalLM",
        ("models.training.granite", "models.training.granite.modeling_granite"),
    ),
}
MODEL_CLASSES = {
    qname: stock
    for name, (stock, modules) in TRAINING_MODELS.items()
    for qname in optimum_names(name, TRAINING_MODELS_PACKAGE, *modules, top_level=False)
}
TRAINING_MODEL_NEXT_STEP = {
    "NeuronModel": 'load the model with transformers.AutoModel.from_pretrained(model_id, device_map="neuron")',
    "NeuronModelMixin": "subclass transformers.PreTrainedModel instead",
    "TrainingNeuronConfig": "pass distributed_config=DistributedConfig(tp_size=N) (transformers.distributed) to from_pretrained",
}
TRAINING_MODEL_MODULES = {
    "NeuronModel": ("models.training.modeling_auto",),
    "NeuronModelMixin": ("models.training.modeling_utils",),
    "TrainingNeuronConfig": ("models.training.config",),
}
# The machinery of optimum-neuron's own tensor-parallel modeling code (models.training exports).
MODELING_INTERNALS = {
    "ALL_ATTENTION_FUNCTIONS": "models.training.modeling_utils",
    "get_pipeline_parameters_for_current_stage": "models.training.pipeline_utils",
    **dict.fromkeys(
        (
            "CustomModule",
            "FusedLinearsSpec",
            "GQAQKVColumnParallelLinearSpec",
            "ModelWeightTransformationSpec",
            "ModelWeightTransformationSpecs",
            "adapt_peft_config_for_model",
            "adapt_state_dict",
            "create_parameter_metadata",
            "specialize_transformation_specs_for_model",
            "to_original_peft_config_for_model",
            "to_original_weights",
        ),
        "models.training.transformations_utils",
    ),
}
INTERNALS_NEXT_STEP = (
    "part of optimum-neuron's parallel modeling code; stock transformers models need none: delete this use"
)
NEURON_MODEL = optimum_names("NeuronModel", TRAINING_MODELS_PACKAGE, "models.training.modeling_auto", top_level=False)
NEURON_MODEL_STEP = f"NeuronModel has no TorchNeuron counterpart: {TRAINING_MODEL_NEXT_STEP['NeuronModel']}"


def _training_model_steps() -> dict[str, str]:
    steps = {}
    for name, modules in TRAINING_MODEL_MODULES.items():
        for qname in optimum_names(name, TRAINING_MODELS_PACKAGE, *modules, top_level=False):
            steps[qname] = TRAINING_MODEL_NEXT_STEP[name]
    for qname, stock in MODEL_CLASSES.items():
        steps[qname] = f"use transformers.{stock} (from_pretrained(model_id, ...) without trn_config)"
    for name, module in MODELING_INTERNALS.items():
        for qname in optimum_names(name, TRAINING_MODELS_PACKAGE, module, top_level=False):
            steps[qname] = INTERNALS_NEXT_STEP
    return steps


PARALLEL_NEXT_STEP = {
    "Parallelizer": "build the model with from_pretrained(..., distributed_config=DistributedConfig(tp_size=N))",
    "ParallelizersManager": "build the model with from_pretrained(..., distributed_config=DistributedConfig(tp_size=N))",
    "make_optimizer_constructor_lazy": "delete it: build the optimizer class directly, after the model is built",
    "consolidate_model_parallel_checkpoints": "save with model.save_pretrained(...) so no shards need consolidating",
    "consolidate_model_parallel_checkpoints_to_unified_checkpoint": (
        "save with model.save_pretrained(...) (torch.distributed.checkpoint for sharded state) instead"
    ),
    "ModelParallelismPlugin": "pass distributed_config=DistributedConfig(tp_size=N, pp_size=M) to from_pretrained",
}
PARALLEL_MODULES = {
    "Parallelizer": ("distributed", "distributed.base"),
    "ParallelizersManager": ("distributed", "distributed.parallelizers_manager"),
    "make_optimizer_constructor_lazy": ("distributed", "distributed.utils"),
    "consolidate_model_parallel_checkpoints": ("distributed", "distributed.checkpointing"),
    "consolidate_model_parallel_checkpoints_to_unified_checkpoint": (
        TRAINING_MODELS_PACKAGE,
        "models.training.checkpointing",
    ),
    "ModelParallelismPlugin": ("accelerate", "accelerate.utils", "accelerate.utils.dataclasses"),
}
PARALLEL_METHODS = {
    "ParallelizersManager": ("parallelizer_for_model", "is_model_supported", "get_supported_model_types")
}


def _parallel_rows():
    for name, modules in PARALLEL_MODULES.items():
        qnames = optimum_names(name, *modules, top_level=False)
        step = Manual(f"{name} has no TorchNeuron counterpart: {PARALLEL_NEXT_STEP[name]}")
        yield from rows_for_names("NM215", (*qnames, *with_methods(qnames, *PARALLEL_METHODS.get(name, ()))), step)


# optimum-neuron training helpers with a same-signature transformers twin
TRAINING_HELPERS = {
    qname: "transformers.trainer_pt_utils.get_model_param_count"
    for qname in optimum_names(
        "get_model_param_count", "models.training.training_utils", "utils.training_utils", top_level=False
    )
}
PATCH_TRANSFORMERS = optimum_names(
    "patch_transformers_for_neuron_sdk",
    TRAINING_MODELS_PACKAGE,
    "models.training.training_utils",
    "utils.training_utils",
    top_level=False,
)

NO_COUNTERPART = "it has no TorchNeuron counterpart: delete this use"
EXPORT_ARGUMENTS = "it fed the ahead-of-time export; TorchNeuron compiles on first call: delete this use"
ARTIFACT_NAME = "it names compiled artifacts TorchNeuron does not write: delete this use"
INPUT_GENERATOR = "it made dummy inputs for tracing, which TorchNeuron does not need: delete this use"
PATCHING = "use unittest.mock.patch, or delete this use"
UTILS_NEXT_STEP = {
    "argument_utils": {
        name: EXPORT_ARGUMENTS
        for name in (
            "LoRAAdapterArguments",
            "IPAdapterArguments",
            "ImageEncoderArguments",
            "InputShapesArguments",
            "NeuronArgumentParser",
            "convert_neuronx_compiler_args_to_neuron",
            "store_compilation_config",
        )
    },
    "constant": {
        **{
            name: ARTIFACT_NAME
            for name in (
                "DECODER_NAME",
                "DIFFUSION_MODEL_TEXT_ENCODER_2_NAME",
                "DIFFUSION_MODEL_TEXT_ENCODER_NAME",
                "DIFFUSION_MODEL_IMAGE_ENCODER_NAME",
                "DIFFUSION_MODEL_UNET_NAME",
                "DIFFUSION_MODEL_TRANSFORMER_NAME",
                "DIFFUSION_MODEL_VAE_DECODER_NAME",
                "DIFFUSION_MODEL_VAE_ENCODER_NAME",
                "DIFFUSION_MODEL_CONTROLNET_NAME",
                "ENCODER_NAME",
                "NEURON_FILE_NAME",
            )
        },
        "WEIGHTS_INDEX_NAME": "use transformers.utils.WEIGHTS_INDEX_NAME",
        "SAFE_WEIGHTS_INDEX_NAME": "use transformers.utils.SAFE_WEIGHTS_INDEX_NAME",
    },
    "import_utils": {
        "is_accelerate_available": "use transformers.utils.is_accelerate_available",
        "is_trl_available": 'use importlib.util.find_spec("trl") is not None',
    },
    "input_generators": {
        name: INPUT_GENERATOR
        for name in (
            "DTYPE_MAPPER",
            "DummyBeamValuesGenerator",
            "DummyMaskedPosGenerator",
            "DummyControNetInputGenerator",
            "ASTDummyAudioInputGenerator",
            "DummyIPAdapterInputGenerator",
            "DummyFluxTransformerRotaryEmbGenerator",
            "DummyFluxKontextTransformerRotaryEmbGenerator",
            "DummyTimestepInputGenerator",
            "WhisperDummyTextInputGenerator",
        )
    },
    "misc": {
        "DiffusersPretrainedConfig": "use the diffusers model's own config class",
        "check_if_weights_replacable": NO_COUNTERPART,
        "get_stable_diffusion_configs": "read each component's config from the diffusers pipeline",
        "replace_weights": "load weights with load_state_dict(...) on the stock model",
        "get_checkpoint_shard_files": "use transformers.utils.hub.get_checkpoint_shard_files",
    },
    "model_utils": {
        "get_tied_parameters_dict": "use accelerate.utils.find_tied_parameters(model)",
        "tie_parameters": "call model.tie_weights()",
        "saved_model_in_temporary_directory": "save to a tempfile.TemporaryDirectory() with save_pretrained",
    },
    "optimization_utils": {
        "get_attention_scores_sd": "use torch.nn.functional.scaled_dot_product_attention",
        "get_attention_scores_sdxl": "use torch.nn.functional.scaled_dot_product_attention",
        "neuron_scaled_dot_product_attention": "use torch.nn.functional.scaled_dot_product_attention",
    },
    "patching": {
        name: PATCHING
        for name in (
            "DynamicPatch",
            "ModelPatcher",
            "Patcher",
            "patch_everywhere",
            "patch_within_function",
            "replace_class_in_inheritance_hierarchy",
        )
    },
}
TRL_VERSION = 'the TRL release optimum-neuron pinned; read importlib.metadata.version("trl") instead'


def _utils_rows():
    for module, names in UTILS_NEXT_STEP.items():
        for name, step in names.items():
            qnames = optimum_names(name, "utils", f"utils.{module}", top_level=False)
            yield from rows_for_names("NM229", qnames, Manual(f"{name} is an optimum-neuron helper: {step}"))
    qnames = optimum_names("TRL_VERSION", "trainers", "trainers.trl_utils", top_level=False)
    yield from rows_for_names("NM229", qnames, Manual(f"TRL_VERSION is an optimum-neuron helper: {TRL_VERSION}"))


ROWS = (
    *STOCK_TWINS,
    *(
        Row(qname, "NM212", Manual(f"{qname.rsplit('.', 1)[1]} has no TorchNeuron counterpart: {step}"))
        for qname, step in _training_model_steps().items()
    ),
    *rows_for_names("NM212", with_methods(NEURON_MODEL, "from_pretrained", "from_config"), Manual(NEURON_MODEL_STEP)),
    *_parallel_rows(),
    *(
        Row(qname, "NM220", Rename(stock, note=f"{qname.rsplit('.', 1)[1]} -> {stock}", from_import=True))
        for qname, stock in TRAINING_HELPERS.items()
    ),
    *rows_for_names(
        "NM216",
        PATCH_TRANSFORMERS,
        Remove(
            fallback="delete the call: stock transformers needs no patching",
            referenced="patch_transformers_for_neuron_sdk has no TorchNeuron counterpart: delete this use",
        ),
    ),
    *_utils_rows(),
)
