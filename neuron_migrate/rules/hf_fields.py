"""What the Hugging Face training classes accept: the optimum-neuron field map and the versions installed.

``NeuronTrainingArguments`` (optimum-neuron 0.4.5, plus the few older names) is mapped field by field
onto ``transformers.TrainingArguments``: the shared fields stay, the Neuron-only ones are dropped, each
for the reason given here, or moved where TorchNeuron expects them (tensor/pipeline parallel sizes go
to ``transformers.distributed.DistributedConfig``, where the model is built).

A few names depend on the transformers / TRL release the user migrates to. The target release is the
one installed next to neuron-migrate, read from package metadata; with none installed the newest row
applies. When the library is installed its real field names are read too, from its source with
``ast`` (the rewrite never imports transformers or torch), and they win over the table.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

# ----- from_pretrained keywords ---------------------------------------------------------------------

# Loading keywords that transformers 5 no longer takes: from_pretrained passes an unknown keyword on
# to the model's __init__, a TypeError. optimum-neuron accepted them (0.4.5 training models pop them).
FROM_PRETRAINED_RENAMED = {"use_auth_token": "token", "torch_dtype": "dtype"}
FROM_PRETRAINED_REMOVED = {
    "resume_download": "downloads always resume",
    "load_in_8bit": "quantization is set with quantization_config; optimum-neuron refused it",
    "load_in_4bit": "quantization is set with quantization_config; optimum-neuron refused it",
}
# The attention switch transformers 5 removed, and the attention name that now means the CUDA
# flash-attn package (optimum-neuron mapped both to its own NKI kernel).
FLASH_ATTENTION_FLAG = "use_flash_attention_2"
FLASH_ATTENTION = "flash_attention_2"
NEURON_ATTENTION = "sdpa"  # PyTorch's scaled_dot_product_attention: the stock path on the neuron device


# ----- NeuronTrainingArguments -> TrainingArguments --------------------------------------------------

# Fields of NeuronTrainingArguments 0.4.5 that TrainingArguments has under the same name and meaning.
SHARED_FIELDS = frozenset(
    {
        "output_dir", "do_train", "do_eval", "eval_strategy", "eval_steps", "per_device_train_batch_size",
        "per_device_eval_batch_size", "gradient_accumulation_steps", "learning_rate", "weight_decay",
        "adam_beta1", "adam_beta2", "adam_epsilon", "max_grad_norm", "num_train_epochs", "max_steps",
        "lr_scheduler_type", "lr_scheduler_kwargs", "warmup_steps", "log_level", "log_level_replica",
        "logging_strategy", "logging_first_step", "logging_steps", "save_strategy", "save_steps",
        "save_total_limit", "save_only_model", "restore_callback_states_from_checkpoint", "seed", "bf16",
        "dataloader_drop_last", "dataloader_num_workers", "dataloader_prefetch_factor", "run_name",
        "disable_tqdm", "remove_unused_columns", "label_names", "accelerator_config", "label_smoothing_factor",
        "optim", "optim_args", "report_to", "resume_from_checkpoint", "gradient_checkpointing",
        "gradient_checkpointing_kwargs", "use_liger_kernel", "average_tokens_across_devices",
    }
)  # fmt: skip

# Fields whose place in TrainingArguments depends on the transformers release (see VERSIONED).
VERSIONED_FIELDS = frozenset({"overwrite_output_dir", "warmup_ratio", "logging_dir"})

# Shared fields that recent transformers 5 releases renamed, keeping the old name as an alias until v6.
# The new name is used when the target release has it.
RENAMED_FIELDS = {
    "gradient_checkpointing": "activation_checkpointing",
    "gradient_checkpointing_kwargs": "activation_checkpointing_kwargs",
}

# Neuron-only fields that are simply dropped, and why (the reason goes into the report).
DROPPED_FIELDS = {
    "disable_sequence_parallel": "sequence parallelism is not wired into DistributedConfig yet",
    "kv_size_multiplier": "KV-head replication belonged to optimum-neuron's own tensor-parallel layers",
    "dataloader_prefetch_size": "it sized the XLA device loader's prefetch queue",
    "skip_cache_push": "it pushed compiled artifacts to the Hugging Face Hub cache, which TorchNeuron does not use",
    "num_local_ranks_per_step": "it throttled optimum-neuron's sharded checkpoint loading",
    "num_ranks_per_loading_step": "it throttled optimum-neuron's sharded checkpoint loading",
    "use_xser": "it chose torch-xla checkpoint serialization",
    "async_save": "it chose optimum-neuron's asynchronous sharded checkpoint writer",
    "fuse_qkv": "it configured optimum-neuron's custom modeling code",
    "recompute_causal_mask": "it configured optimum-neuron's custom modeling code",
    "disable_embedding_parallelization": "it configured optimum-neuron's own tensor-parallel layers",
    "transpose_nki_inputs": "it configured optimum-neuron's NKI attention kernel",
    "enable_throughput_metrics": "optimum-neuron's own training metrics; Trainer logs its own",
    "enable_mfu_metrics": "optimum-neuron's own training metrics; Trainer logs its own",
    "enable_efficiency_metrics": "optimum-neuron's own training metrics; Trainer logs its own",
    "metrics_window_size": "optimum-neuron's own training metrics; Trainer logs its own",
    "half_precision_backend": "it chose between the XLA and torch autocast backends; bf16=True uses torch autocast",
    "use_autocast": "bf16=True is torch autocast in Trainer",
    "pipeline_parallel_num_microbatches": "DistributedConfig has no microbatch count",
}

# Neuron-only fields dropped with a review marker: their effect on numerics or memory is gone.
REVIEWED_FIELDS = {
    "zero_1": "zero_1 dropped: to shard optimizer state use FSDP (DistributedConfig(fsdp_size=N))",
    "stochastic_rounding_enabled": "stochastic rounding has no Trainer counterpart",
    "optimizer_use_master_weights": "fp32 master weights: keep fp32 weights with bf16=True autocast instead",
    "optimizer_use_fp32_grad_acc": "fp32 gradient accumulation: keep fp32 weights with bf16=True autocast instead",
    "optimizer_save_master_weights_in_ckpt": "master weights are no longer saved separately in checkpoints",
    "neuron_cc_optlevel": "compiler optimization level: pass it in NEURON_CC_FLAGS if you still need it",
}
# The value of a reviewed field that needs no review: it matches what Trainer does anyway.
REVIEWED_HARMLESS = {
    "zero_1": False,
    "stochastic_rounding_enabled": False,
    "optimizer_use_master_weights": False,
    "optimizer_use_fp32_grad_acc": False,
    "optimizer_save_master_weights_in_ckpt": False,
}

# Model-parallel sizes and the DistributedConfig field each becomes.
PARALLEL_FIELDS = {"tensor_parallel_size": "tp_size", "pipeline_parallel_size": "pp_size"}

# NeuronTrainingArguments 0.4.5, in declaration order: a positional argument's name is its position here.
NEURON_ARGUMENT_ORDER = (
    "output_dir", "overwrite_output_dir", "do_train", "do_eval", "eval_strategy", "per_device_train_batch_size",
    "per_device_eval_batch_size", "gradient_accumulation_steps", "learning_rate", "weight_decay", "adam_beta1",
    "adam_beta2", "adam_epsilon", "max_grad_norm", "num_train_epochs", "max_steps", "lr_scheduler_type",
    "lr_scheduler_kwargs", "warmup_ratio", "warmup_steps", "log_level", "log_level_replica", "logging_dir",
    "logging_strategy", "logging_first_step", "logging_steps", "save_strategy", "save_steps", "save_total_limit",
    "save_only_model", "restore_callback_states_from_checkpoint", "seed", "bf16", "dataloader_drop_last",
    "eval_steps", "dataloader_num_workers", "dataloader_prefetch_factor", "run_name", "disable_tqdm",
    "remove_unused_columns", "label_names", "accelerator_config", "label_smoothing_factor", "optim", "optim_args",
    "report_to", "resume_from_checkpoint", "gradient_checkpointing", "gradient_checkpointing_kwargs",
    "use_liger_kernel", "average_tokens_across_devices", "dataloader_prefetch_size", "skip_cache_push",
    "use_autocast", "zero_1", "stochastic_rounding_enabled", "optimizer_use_master_weights",
    "optimizer_use_fp32_grad_acc", "optimizer_save_master_weights_in_ckpt", "tensor_parallel_size",
    "disable_sequence_parallel", "pipeline_parallel_size", "pipeline_parallel_num_microbatches",
    "kv_size_multiplier", "num_local_ranks_per_step", "use_xser", "async_save", "fuse_qkv",
    "recompute_causal_mask", "enable_throughput_metrics", "enable_mfu_metrics", "enable_efficiency_metrics",
    "metrics_window_size",
)  # fmt: skip

# Fields that only existed on the Neuron side: a `**dict` holding one of these fails in stock classes.
NEURON_ONLY_FIELDS = frozenset({*DROPPED_FIELDS, *REVIEWED_FIELDS, *PARALLEL_FIELDS})

# NeuronSFTConfig's own renames on top of the TrainingArguments map.
SFT_RENAMED = {"max_seq_length": "max_length"}
# NeuronSFTTrainer padded every batch to max_length; TRL's SFTConfig(pad_to_multiple_of="auto") pads to a
# multiple of 128 on the neuron device (trl/trainer/sft_config.py), a few static shapes with less padding.
SFT_PADDING_DEFAULT = (
    'pad_to_multiple_of left to TRL\'s "auto": batches padded to a multiple of 128 on the neuron device '
    "(optimum-neuron padded every batch to max_length)"
)
# The longest sequence of the published TorchNeuron fine-tuning recipe (Hugging Face on Trainium).
RECIPE_MAX_LENGTH = 2048

# TrainingNeuronConfig fields (0.4.5): only the sizes have DistributedConfig counterparts.
TRN_CONFIG_ORDER = (
    "tensor_parallel_size", "sequence_parallel_enabled", "kv_size_multiplier", "pipeline_parallel_size",
    "virtual_pipeline_parallel_size", "pipeline_parallel_num_microbatches", "pipeline_parallel_use_zero1_optimizer",
    "gradient_checkpointing", "checkpoint_dir", "num_local_ranks_per_step", "use_xser", "async_save", "fuse_qkv",
    "recompute_causal_mask", "transpose_nki_inputs",
)  # fmt: skip
TRN_CONFIG_DEFAULTS = {
    "sequence_parallel_enabled": False, "kv_size_multiplier": None, "virtual_pipeline_parallel_size": 1,
    "pipeline_parallel_num_microbatches": 1, "pipeline_parallel_use_zero1_optimizer": False,
    "gradient_checkpointing": False, "checkpoint_dir": None, "num_local_ranks_per_step": 8, "use_xser": True,
    "async_save": False, "fuse_qkv": False, "recompute_causal_mask": True, "transpose_nki_inputs": True,
}  # fmt: skip


# ----- names that come and go with the release -------------------------------------------------------


@dataclass(frozen=True)
class Versioned:
    """``name`` is accepted by ``owner`` from release ``since`` (inclusive) until ``removed_in`` (exclusive)."""

    owner: str
    name: str
    since: tuple[int, ...] = ()
    removed_in: tuple[int, ...] | None = None

    def present_in(self, version: tuple[int, ...] | None) -> bool:
        if version is None:  # nothing installed: migrate to the newest release
            return self.removed_in is None
        return version >= self.since and (self.removed_in is None or version < self.removed_in)


VERSIONED = (
    # transformers 5.0 removed overwrite_output_dir: output_dir is always overwritten unless resuming.
    Versioned("TrainingArguments", "overwrite_output_dir", removed_in=(5, 0)),
    # Deprecated in 5.0 ("removed in v5.2"): warmup_steps takes a float ratio, TensorBoard reads an env var.
    Versioned("TrainingArguments", "warmup_ratio", removed_in=(5, 2)),
    Versioned("TrainingArguments", "logging_dir", removed_in=(5, 2)),
    Versioned("Trainer", "processing_class", since=(4, 46)),
    Versioned("Trainer", "tokenizer", removed_in=(5, 0)),
    # TRL 0.25 moved ORPO to trl.experimental.orpo; the top-level aliases went in 0.29.
    Versioned("trl", "experimental.orpo", since=(0, 25)),
)

# The package each owner belongs to (whose installed version decides).
OWNER_PACKAGE = {
    "TrainingArguments": "transformers",
    "Seq2SeqTrainingArguments": "transformers",
    "Trainer": "transformers",
    "SFTConfig": "trl",
    "ORPOConfig": "trl",
    "trl": "trl",
}

# Where each class is defined in its installed package, for reading its real fields.
CLASS_SOURCES = {
    "TrainingArguments": ("transformers", "training_args.py"),
    "Seq2SeqTrainingArguments": ("transformers", "training_args_seq2seq.py"),
    "Trainer": ("transformers", "trainer.py"),
    "SFTConfig": ("trl", "trainer/sft_config.py"),
    "ORPOConfig": ("trl", "experimental/orpo/orpo_config.py"),
}


def table_says(owner: str, name: str) -> bool | None:
    """Whether the version table has ``owner`` accept ``name`` in the target release (None: no row)."""
    version = installed_version(OWNER_PACKAGE.get(owner, "transformers"))
    for row in VERSIONED:
        if row.owner == owner and row.name == name:
            return row.present_in(version)
    return None


@functools.cache
def installed_version(package: str) -> tuple[int, ...] | None:
    """The release of ``package`` installed here, as numbers (``5.24.0.dev0`` -> ``(5, 24, 0)``)."""
    import importlib.metadata  # on first use: some 35 ms of start-up that only optimum code needs

    try:
        text = importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None
    numbers = re.match(r"\d+(?:\.\d+)*", text)
    return tuple(int(n) for n in numbers.group().split(".")) if numbers else None


def version_text(package: str) -> str:
    version = installed_version(package)
    return f"{package} {'.'.join(map(str, version))}" if version else f"the newest {package}"


@functools.cache
def installed_fields(owner: str) -> frozenset[str] | None:
    """The field names of the installed dataclass ``owner`` (its ``__init__`` parameters for Trainer),
    read from the source with ``ast``; None when the package is not installed or cannot be read."""
    package, relative = CLASS_SOURCES[owner]
    root = _package_root(package)
    if root is None:
        return None
    try:
        if owner == "Trainer":
            return _init_parameters(root / relative, owner)
        return _dataclass_fields(root / relative, owner, root, depth=0)
    except (OSError, SyntaxError, ValueError):
        return None


def _package_root(package: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).parent


def _class_in(path: Path, name: str) -> tuple[ast.ClassDef, ast.Module]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node, tree
    raise ValueError(f"no class {name} in {path.name}")


def _init_parameters(path: Path, name: str) -> frozenset[str]:
    cls, _ = _class_in(path, name)
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            params = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            return frozenset(p.arg for p in params[1:])
    raise ValueError(f"{name} has no __init__")


def _dataclass_fields(path: Path, name: str, root: Path, depth: int) -> frozenset[str]:
    """Annotated class attributes of ``name`` and of the bases it inherits them from."""
    if depth > 5:
        raise ValueError("base classes nest too deep")
    cls, tree = _class_in(path, name)
    fields: set[str] = set()
    for base in cls.bases:
        if isinstance(base, ast.Name):
            fields |= _base_fields(base.id, path, tree, root, depth)
    for node in cls.body:
        annotated = isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
        if annotated and "ClassVar" not in ast.unparse(node.annotation):
            fields.add(node.target.id)
    return frozenset(fields)


def _base_fields(base: str, path: Path, tree: ast.Module, root: Path, depth: int) -> frozenset[str]:
    if base in CLASS_SOURCES:
        package, relative = CLASS_SOURCES[base]
        base_root = _package_root(package)
        if base_root is None:
            raise ValueError(f"{package} is not installed")
        return _dataclass_fields(base_root / relative, base, base_root, depth + 1)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == base:
            return _dataclass_fields(path, base, root, depth + 1)
        if isinstance(node, ast.ImportFrom) and node.level and any(a.name == base for a in node.names):
            folder = path.parent
            for _ in range(node.level - 1):
                folder = folder.parent
            module = folder.joinpath(*(node.module or "").split("."))
            source = module.with_suffix(".py") if module.with_suffix(".py").exists() else module / "__init__.py"
            return _dataclass_fields(source, base, root, depth + 1)
    # A base from elsewhere (object, a mixin without fields) adds nothing we can read.
    return frozenset()


# ----- Neuron-only fields a script keeps reading -----------------------------------------------------

# The argument parsers of Hugging Face scripts, and their methods that return the parsed dataclasses.
PARSER_NAMES = ("HfArgumentParser", "NeuronHfArgumentParser", "TrlParser")
PARSE_METHODS = frozenset(
    {"parse_args_into_dataclasses", "parse_args_and_config", "parse_dict", "parse_json_file", "parse_yaml_file"}
)
# The optimum-neuron arguments dataclasses a parser can be built from.
NEURON_ARGUMENT_CLASSES = frozenset(
    {"NeuronTrainingArguments", "Seq2SeqNeuronTrainingArguments", "NeuronSFTConfig", "NeuronORPOConfig"}
)
# The type and default (optimum-neuron 0.4.5) of each Neuron-only field, declared again in a script's own
# dataclass that takes the field over; fields of older releases take the type their values had.
NEURON_FIELD_DECLARATIONS = {
    "tensor_parallel_size": ("int", "1"),
    "pipeline_parallel_size": ("int", "1"),
    "zero_1": ("bool", "True"),
    "stochastic_rounding_enabled": ("bool", "True"),
    "optimizer_use_master_weights": ("bool", "True"),
    "optimizer_use_fp32_grad_acc": ("bool", "True"),
    "optimizer_save_master_weights_in_ckpt": ("bool", "False"),
    "neuron_cc_optlevel": ("int | None", "None"),
    "disable_sequence_parallel": ("bool", "False"),
    "kv_size_multiplier": ("int | None", "None"),
    "dataloader_prefetch_size": ("int | None", "None"),
    "skip_cache_push": ("bool", "False"),
    "num_local_ranks_per_step": ("int", "8"),
    "num_ranks_per_loading_step": ("int", "8"),
    "use_xser": ("bool", "True"),
    "async_save": ("bool", "False"),
    "fuse_qkv": ("bool", "False"),
    "recompute_causal_mask": ("bool", "True"),
    "disable_embedding_parallelization": ("bool", "False"),
    "transpose_nki_inputs": ("bool", "True"),
    "enable_throughput_metrics": ("bool", "True"),
    "enable_mfu_metrics": ("bool", "True"),
    "enable_efficiency_metrics": ("bool", "True"),
    "metrics_window_size": ("int", "50"),
    "half_precision_backend": ("str", '"auto"'),
    "use_autocast": ("bool", "False"),
    "pipeline_parallel_num_microbatches": ("int", "-1"),
}
# What ``args.trn_config`` was built from: the sizes a DistributedConfig takes instead.
TRN_CONFIG_FIELDS = ("tensor_parallel_size", "pipeline_parallel_size")


@dataclass(frozen=True)
class TakenOver:
    """The Neuron-only fields a script reads from its parsed Neuron arguments (``neuron_vars``), which its
    own dataclass ``own_class`` (parsed into ``own_var`` by the same parser) declares after the migration,
    so that their command-line flags still parse and the script still reads them."""

    own_class: str
    own_var: str
    neuron_vars: frozenset[str]
    fields: tuple[str, ...]
    # those the class does not declare yet
    missing: tuple[str, ...] = ()


def fields_taken_over(source: str) -> TakenOver | None:
    """What :class:`TakenOver` says for a legacy script (None: no such parser, or nothing to take over).

    Read with ``ast`` from the script's text, so a launch script's rules, which see the Python file
    before or after its migration, decide as the Python rules do: after it, the fields are the own
    dataclass's own (and the legacy parser is gone)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    neuron = _neuron_class_names(tree)
    if not neuron:
        return None
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef) and _is_dataclass(node)}
    parsers = _parser_elements(tree)
    for node in ast.walk(tree):
        found = _parse_targets(node, parsers)
        if found is None:
            continue
        neuron_vars, own = set(), None
        for element, target in found:
            if isinstance(element, ast.Name) and element.id in neuron:
                neuron_vars.add(target)
            elif own is None and isinstance(element, ast.Name) and element.id in classes:
                own = (element.id, target)
        if own and neuron_vars:
            return _taken_over(tree, classes[own[0]], own[1], frozenset(neuron_vars))
    return None


def parses_sft_config(source: str) -> bool:
    """Whether the script parses its command line into TRL's SFTConfig (or optimum-neuron's NeuronSFTConfig,
    which it becomes), so a flag of an SFTConfig field must be spelled as TRL spells it."""
    if "SFTConfig" not in source:
        return False
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    names = {"SFTConfig", "NeuronSFTConfig"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names.update(alias.asname for alias in node.names if alias.asname and "SFTConfig" in alias.name)
    for elements in _parser_elements(tree).values():
        for element in elements:
            name = element.attr if isinstance(element, ast.Attribute) else getattr(element, "id", "")
            if name in names:
                return True
    return False


def _taken_over(tree: ast.Module, own: ast.ClassDef, own_var: str, neuron_vars: frozenset[str]) -> TakenOver | None:
    declared = {
        node.target.id for node in own.body if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    }
    wanted = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in neuron_vars:
            if node.attr == "trn_config":
                wanted.update(TRN_CONFIG_FIELDS)
            elif node.attr in NEURON_FIELD_DECLARATIONS:
                wanted.add(node.attr)
    fields = tuple(name for name in NEURON_FIELD_DECLARATIONS if name in wanted)
    missing = tuple(name for name in fields if name not in declared)
    return TakenOver(own.name, own_var, neuron_vars, fields, missing) if fields else None


def _neuron_class_names(tree: ast.Module) -> set[str]:
    """Local names of the optimum-neuron arguments classes the module imports."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("optimum.neuron"):
            names.update(alias.asname or alias.name for alias in node.names if alias.name in NEURON_ARGUMENT_CLASSES)
    return names


def _is_dataclass(node: ast.ClassDef) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "dataclass":
            return True
    return False


def _parser_elements(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """``parser = HfArgumentParser((A, B))``: the variable -> the dataclasses it parses (a parser built
    and used at once is keyed by its position)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            elements = _parser_call_elements(node.value)
            if elements is not None:
                out[node.targets[0].id] = elements
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            elements = _parser_call_elements(node.func.value)
            if elements is not None:
                out[f"<{node.lineno}:{node.col_offset}>"] = elements
    return out


def _parser_call_elements(node: ast.expr) -> list[ast.expr] | None:
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name not in PARSER_NAMES:
        return None
    first = node.args[0]
    return list(first.elts) if isinstance(first, (ast.Tuple, ast.List)) else [first]


def _parse_targets(node: ast.AST, parsers) -> list[tuple[ast.expr, str]] | None:
    """``a, b = parser.parse_args_into_dataclasses()``: (dataclass, variable) pairs."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call)):
        return None
    call, target = node.value, node.targets[0]
    if not isinstance(call.func, ast.Attribute) or call.func.attr not in PARSE_METHODS:
        return None
    receiver = call.func.value
    elements = parsers.get(receiver.id) if isinstance(receiver, ast.Name) else _parser_call_elements(receiver)
    if elements is None or not isinstance(target, (ast.Tuple, ast.List)):
        return None
    names = target.elts
    if len(names) == len(elements) + 1 and _returns_remaining(call):
        names = names[:-1]
    if len(names) != len(elements):
        return None
    return [(element, name.id) for element, name in zip(elements, names) if isinstance(name, ast.Name)]


def _returns_remaining(call: ast.Call) -> bool:
    """``return_remaining_strings=True``: the parse returns the unknown arguments after the dataclasses."""
    return any(k.arg == "return_remaining_strings" and getattr(k.value, "value", None) is True for k in call.keywords)
