"""What the Neuron-only keywords of a loading call become: the input shapes a promise the caller keeps
by padding, the cast settings the load ``dtype``, a core count tensor parallelism over torchrun ranks,
the export-only settings dropped with the reason (``EXPORT_ONLY``), and the keywords transformers 5
rejects renamed or dropped. Shared by the model, pipeline, sentence-transformers and diffusers loaders.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules import hf_fields as hf
from neuron_migrate.rules.calls import UNKNOWN, keyword_arg, literal
from neuron_migrate.rules.optimum_inference.common import PRECOMPILED_ORG
from neuron_migrate.rules.optimum_inference.reading import Keyword, Reading

# The shapes the model was compiled for. They are not load arguments any more: the caller keeps
# them by padding (each new shape compiles a new graph).
INPUT_SHAPES = (
    "batch_size",
    "sequence_length",
    "num_choices",
    "num_beams",
    "height",
    "width",
    "image_size",
    "patch_size",
    "num_channels",
    "audio_sequence_length",
    "num_images_per_prompt",
    "text_batch_size",
    "image_batch_size",
    "n_positions",  # the sequence length of transformers-neuronx and early optimum-neuron decoders
)
# Export-time settings with no load-time counterpart, and why each goes.
EXPORT_ONLY = {
    "export": "the model compiles when it first runs",
    "compiler_workdir": "compiler artifacts go to TORCH_NEURONX_DEBUG_DIR",
    "optlevel": "compiler options go in NEURON_CC_FLAGS",
    "disable_fast_relayout": "compiler options go in NEURON_CC_FLAGS",
    "instance_type": "code compiles for the device it runs on",
    "inline_weights_to_neff": "no compiled artifact holds the weights",
    "disable_neuron_cache": "the compile cache is set with TORCH_NEURONX_NEFF_CACHE_DIR",
    "disable_fallback": "CPU fallback is set with TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION",
    "dynamic_batch_size": "each batch size compiles its own graph: pad batches to one size",
    "task": "the class sets the task",
    "file_name": "there is no compiled *.neuron file to load",
    "model_save_dir": "there is no compiled artifact to keep",
    "neuron_config": "there is no compiled artifact to describe",
    "data_parallel_mode": "run one process per NeuronCore with torchrun instead",
    "device_ids": "run one process per NeuronCore with torchrun instead",
    "load_weights": "the weights load with the model",
    **dict.fromkeys(
        (
            "encoder_file_name",
            "decoder_file_name",
            "text_encoder_file_name",
            "text_encoder_2_file_name",
            "unet_file_name",
            "transformer_file_name",
            "vae_encoder_file_name",
            "vae_decoder_file_name",
            "controlnet_file_name",
            "image_encoder_file_name",
        ),
        "there is no compiled *.neuron file to load",
    ),
}
TENSOR_PARALLEL = ("tensor_parallel_size", "num_cores")  # num_cores: the deprecated alias
RENAMED = {"use_auth_token": "token", "torch_dtype": "dtype"}
# auto_cast_type -> torch dtype of the weights; tf32 only changed matmul precision (None).
CAST_TYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "f32": "float32", "tf32": None}
NO_AUTO_CAST = (None, "none")
NEURON_SPREAD_KEYS = "export, input shapes (batch_size, sequence_length, ...), auto_cast*, num_cores, compiler flags"


@dataclass
class Migration:
    """A migrated loading call: its new arguments and what the edit says."""

    args: list[cst.Arg]
    review: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    message: str = ""

    def note(self, legacy: str, target: str, extra: str = "") -> str:
        text = f"{legacy} -> {target}{extra}"
        if self.dropped:
            text += f"; dropped {', '.join(self.dropped)}"
        return text


def shapes_review(shapes: dict[str, str]) -> str:
    """The marker naming the compiled input shapes the caller must now keep by padding."""
    shapes = dict(shapes)
    parts = []
    length = shapes.pop("sequence_length", None)
    if length is not None:
        parts.append(f'pad with padding="max_length", max_length={length}')
    batch = shapes.pop("batch_size", None)
    parts += [f"{name}={value}" for name, value in shapes.items()]
    text = ", ".join(parts)
    if batch is not None:
        text = f"{text} and batch {batch}" if text else f"batch {batch}"
    return f"inputs must keep these shapes: {text}"


@dataclass
class ExportSettings:
    """The Neuron-only keywords of a loading call, sorted by what becomes of them."""

    shapes: dict[str, str] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    export: object = False
    tensor_parallel: Keyword | None = None
    auto_cast: Keyword | None = None
    auto_cast_type: Keyword | None = None
    passed: dict[str, Keyword] = field(default_factory=dict)  # the other keywords

    @classmethod
    def read(cls, reading: Reading) -> ExportSettings:
        settings = cls()
        for name, keyword in reading.keywords.items():
            if name == "n_positions":
                settings.shapes.setdefault("sequence_length", keyword.code)
                settings.dropped.append(name)
            elif name in INPUT_SHAPES:
                settings.shapes[name] = keyword.code
                settings.dropped.append(name)
            elif name == "export":
                settings.export = keyword.literal()
                settings.dropped.append(f"export ({EXPORT_ONLY['export']})")
            elif name in EXPORT_ONLY:
                settings.dropped.append(f"{name} ({EXPORT_ONLY[name]})")
            elif name in TENSOR_PARALLEL:
                if settings.tensor_parallel is None or name == "tensor_parallel_size":
                    settings.tensor_parallel = keyword
            elif name == "auto_cast":
                settings.auto_cast = keyword
            elif name == "auto_cast_type":
                settings.auto_cast_type = keyword
            else:
                settings.passed[name] = keyword
        return settings

    def cast_dtype(self, gated: bool, default_cast=None, default_type: str | None = None) -> tuple[str | None, str]:
        """The torch dtype name the cast settings ask for, and a review note ("" = none needed).

        ``gated``: auto_cast_type applied only with auto_cast on (traced encoders and pipelines, whose
        defaults are ``default_cast``/``default_type``); otherwise it is the weights' dtype (decoders)."""
        cast = self.auto_cast.literal() if self.auto_cast is not None else default_cast
        if gated and cast in NO_AUTO_CAST:
            return None, ""
        if self.auto_cast_type is not None:
            kind = self.auto_cast_type.literal()
        else:
            kind = (default_type or "bf16") if gated else None
        if kind is None:
            return None, ""
        if kind is UNKNOWN:
            return None, f"set dtype= to the torch dtype auto_cast_type={self.auto_cast_type.code} names"
        dtype = CAST_TYPES.get(kind)
        if dtype is None:
            return None, f"auto_cast_type={kind!r} has no load-time setting: the model stays float32"
        if gated and cast != "all":
            return dtype, f"weights now load in torch.{dtype} (auto_cast cast only matmuls): check accuracy"
        return dtype, ""

    def checkpoint_review(self, model: cst.BaseExpression | None = None) -> str:
        """The note that a load without export=True must name the original checkpoint ("" when it
        exports, or names an aws-neuron repository: NM309 marks that one with its source model)."""
        repository = literal(model, single_token=True) if model is not None else None
        if self.export is True or (isinstance(repository, str) and repository.startswith(PRECOMPILED_ORG)):
            return ""
        return "this must be the original checkpoint: a Neuron-compiled one (*.neuron files) cannot be loaded"


def model_argument(call: cst.Call, reading: Reading) -> cst.BaseExpression | None:
    """The model id a loading call names: its first positional argument, or the keyword for it."""
    if reading.positional:
        return call.args[reading.positional[0]].value
    for name in ("pretrained_model_name_or_path", "model_id", "model_name_or_path", "model"):
        if name in reading.keywords and not reading.keywords[name].source:
            return reading.keywords[name].value
    return None


def tensor_parallel_size(keyword: Keyword | None):
    """The core count as an int (1 when absent), or the keyword itself when it is not a literal."""
    if keyword is None:
        return 1
    value = keyword.literal()
    if value is None:
        return 1
    return value if isinstance(value, int) else keyword


def torchrun_review(cores) -> str:
    count = cores.code if isinstance(cores, Keyword) else cores
    text = f"tensor parallel over {count} NeuronCores: launch with torchrun --nproc-per-node {count}"
    if isinstance(cores, Keyword):
        text += '; with one core use device_map="neuron" instead'
    return text


def unresolved_review(call: cst.Call, reading: Reading) -> str:
    if not reading.unresolved:
        return ""
    spreads = ", ".join(f"`**{code_of(call.args[i].value)}`" for i in reading.unresolved)
    return f"{spreads} must no longer pass {NEURON_SPREAD_KEYS}"


FLASH_REVIEW = (
    "flash_attention_2 was optimum-neuron's NKI kernel; in stock transformers it is the CUDA flash-attn package: "
    f'"{hf.NEURON_ATTENTION}" is the stock path on neuron, check speed'
)


def stock_loading_args(args: list[cst.Arg]) -> tuple[list[cst.Arg], list[str], str]:
    """The arguments of a stock ``from_pretrained`` without the keywords transformers 5 rejects:
    old names renamed, removed switches dropped, flash attention asked for as ``"sdpa"``.
    Returns (arguments, what was dropped and why, review note or "")."""
    names = {arg.keyword.value for arg in args if arg.keyword}
    out, dropped, review = [], [], ""
    sdpa = cst.SimpleString(f'"{hf.NEURON_ATTENTION}"')
    for arg in args:
        name = arg.keyword.value if arg.keyword else None
        if name in hf.FROM_PRETRAINED_REMOVED:
            dropped.append(f"{name} ({hf.FROM_PRETRAINED_REMOVED[name]})")
            continue
        if name in hf.FROM_PRETRAINED_RENAMED and hf.FROM_PRETRAINED_RENAMED[name] not in names:
            arg = keyword_arg(arg, hf.FROM_PRETRAINED_RENAMED[name])
        elif name == hf.FLASH_ATTENTION_FLAG:
            wanted = literal(arg.value, single_token=True)
            if wanted is False or "attn_implementation" in names:
                dropped.append(f"{name} (removed in transformers 5; attn_implementation chooses the kernel)")
                continue
            if wanted is not True:
                review = f"`{name}={code_of(arg.value).strip()}` became attn_implementation=\"{hf.NEURON_ATTENTION}\""
                review += f" either way (transformers 5 removed the switch); {FLASH_REVIEW}"
            else:
                review = FLASH_REVIEW
            arg = arg.with_changes(keyword=cst.Name("attn_implementation"), value=sdpa)
        elif name == "attn_implementation" and literal(arg.value, single_token=True) == hf.FLASH_ATTENTION:
            arg = arg.with_changes(value=sdpa)
            review = FLASH_REVIEW
        out.append(arg)
    return out, dropped, review
