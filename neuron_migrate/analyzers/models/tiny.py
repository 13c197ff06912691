"""A tiny random model of a transformers architecture, from its config: no weights, no network.

Depth, widths, heads, vocabulary and experts are shrunk; every other field of the config is kept, so the
architecture's own code paths (attention kind, rope, norms, routing, caches) are what runs. Fields are found by
their names across the config classes of transformers; a config whose tiny form cannot be built says why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LAYERS = 2
HIDDEN = 64
HEADS = 4
KV_HEADS = 2
HEAD_DIM = HIDDEN // HEADS
FFN = 128
VOCAB = 512
EXPERTS = 4
EXPERTS_PER_TOKEN = 2

# field name -> the tiny value; a field is set only where the config has it
DEPTH = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "decoder_layers", "encoder_layers",
         "num_decoder_layers", "num_encoder_layers")
WIDTH = ("hidden_size", "d_model", "n_embd", "dim", "embed_dim", "model_dim", "word_embed_proj_dim")
HEAD_COUNT = ("num_attention_heads", "n_head", "num_heads", "n_heads", "encoder_attention_heads",
              "decoder_attention_heads")
KV_HEAD_COUNT = ("num_key_value_heads", "n_kv_heads", "num_kv_heads", "multi_query_group_num")
FFN_WIDTH = ("intermediate_size", "ffn_dim", "n_inner", "d_ff", "encoder_ffn_dim", "decoder_ffn_dim",
             "ffn_hidden_size", "moe_intermediate_size", "shared_expert_intermediate_size", "expert_intermediate_size")
EXPERT_COUNT = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts", "num_experts_total")
EXPERT_CHOICE = ("num_experts_per_tok", "moe_topk", "top_k", "num_selected_experts", "moe_k")
SMALL_DIMS = {"head_dim": HEAD_DIM, "kv_lora_rank": 16, "q_lora_rank": 32, "qk_rope_head_dim": 8,
              "qk_nope_head_dim": 8, "v_head_dim": HEAD_DIM, "n_shared_experts": 1, "num_shared_experts": 1,
              "n_group": 1, "topk_group": 1, "d_kv": HEAD_DIM, "attention_head_dim": HEAD_DIM,
              "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 16,
              "linear_value_head_dim": 16, "state_size": 16, "mamba_d_state": 16, "mamba_n_heads": 4,
              "mamba_d_head": 16, "ssm_state_size": 16, "time_step_rank": 8, "conv_kernel": 4}
# token ids of the original vocabulary that must stay inside the tiny one
TOKEN_IDS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id", "sep_token_id",
             "cls_token_id", "mask_token_id", "unk_token_id", "image_token_id", "image_token_index")
# vision: the picture and its patches (a ViT of a 64-pixel picture in 8-pixel patches has 64 tokens), and the
# per-stage lists of hierarchical models (Swin, ConvNeXt, ResNet, PVT): two narrow blocks per stage
IMAGE = 64  # a MobileViT downsamples 32 times and then unfolds 2 x 2 patches
PATCH = 8
STAGE_WIDTH = 32  # group norms of 32 groups (BiT) need stages at least this wide
STAGE_DEPTHS = ("depths", "num_layers_per_stage", "stage_depths")
STAGE_WIDTHS = ("hidden_sizes", "embed_dims", "stage_widths", "dims", "channels")
STAGE_HEADS = ("num_heads", "num_attention_heads", "heads")
# per-layer lists whose length must follow the depth
LAYER_LISTS = ("layer_types", "mlp_only_layers", "layers_block_type", "block_types", "attn_layer_indices",
               "sliding_window_pattern_list", "hybrid_override_pattern")


class TinyConfigError(Exception):
    """The architecture has no config transformers can build here, or its tiny form was refused."""


@dataclass
class Spec:
    """What ``audit --model`` was given: a model_type, a config.json, or a model folder holding one."""

    model_type: str
    config: dict[str, Any]  # the fields given (empty for a bare model_type)
    source: str  # the model_type or the path, as the user wrote it
    folder: str = ""  # a model folder with modeling code of its own (auto_map), loaded from there


def read_spec(text: str) -> Spec:
    path = Path(text)
    folder = ""
    if path.is_dir():
        folder = str(path.resolve())
        if (path / "model_index.json").is_file() and not (path / "config.json").is_file():
            models = sorted(p.parent.name for p in path.glob("*/config.json") if "_class_name" in p.read_text(
                encoding="utf-8", errors="replace"))
            raise TinyConfigError(f"{text}: a diffusers pipeline: give one of its models' folders"
                                  + (f" ({', '.join(f'{text}/{m}' for m in models)})" if models else ""))
        path = path / "config.json"
        if not path.is_file():
            raise TinyConfigError(f"{text}: a model folder needs a config.json")
    if path.suffix == ".json" or path.is_file():
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise TinyConfigError(f"{text}: cannot read the config: {exc}") from None
        if isinstance(config, dict) and isinstance(config.get("_class_name"), str):
            return Spec(config["_class_name"], config, text)  # a diffusers model's config names its class
        model_type = config.get("model_type") if isinstance(config, dict) else None
        if not model_type:
            raise TinyConfigError(f"{text}: the config has no model_type (transformers) or _class_name (diffusers)")
        return Spec(model_type, config, text, folder if config.get("auto_map") else "")
    return Spec(text, {}, text)


def tiny_config(spec: Spec):
    """The architecture's config with the given fields, then shrunk."""
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    if spec.folder:
        return _own_config(spec)
    if spec.model_type not in CONFIG_MAPPING_NAMES:
        raise TinyConfigError(f"{spec.model_type!r} is not an architecture of this transformers")
    given = {k: v for k, v in spec.config.items() if k not in ("model_type", "transformers_version", "architectures")}
    try:
        config = AutoConfig.for_model(spec.model_type, **given)
    except Exception as exc:  # noqa: BLE001 - any refusal of the config class is the answer
        raise TinyConfigError(f"the config cannot be built: {_one_line(exc)}") from None
    for part in _parts(config):
        shrink(part)
    return config


def _own_config(spec: Spec):
    """The config class of a model folder with its own code (``auto_map``), loaded from the folder: offline,
    since the code is on disk."""
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(spec.folder, trust_remote_code=True, local_files_only=True)
    except Exception as exc:  # noqa: BLE001
        raise TinyConfigError(f"the config cannot be built: {_one_line(exc)}") from None
    for part in _parts(config):
        shrink(part)
    return config


def _parts(config, seen=None):
    """The config and every config nested in it (text / vision / encoder / decoder sub-configs), once each."""
    from transformers import PretrainedConfig

    seen = set() if seen is None else seen
    if id(config) in seen:
        return
    seen.add(id(config))
    yield config
    for value in list(vars(config).values()):
        if isinstance(value, PretrainedConfig):
            yield from _parts(value, seen)


def shrink(config) -> None:
    depth = _first(config, DEPTH)
    for name in DEPTH:
        _set_smaller(config, name, LAYERS)
    _set_all(config, WIDTH, HIDDEN)
    heads = _first(config, HEAD_COUNT)
    _set_all(config, HEAD_COUNT, HEADS)
    kv = _first(config, KV_HEAD_COUNT)
    if kv is not None:
        _set_all(config, KV_HEAD_COUNT, HEADS if heads is not None and kv >= heads else KV_HEADS)
    _set_all(config, FFN_WIDTH, FFN)
    for name in EXPERT_COUNT:
        _set_smaller(config, name, EXPERTS)
    for name in EXPERT_CHOICE:
        _set_smaller(config, name, EXPERTS_PER_TOKEN)
    for name, value in SMALL_DIMS.items():
        _set_smaller(config, name, value)
    _shrink_vocab(config)
    _agree_head_dims(config)
    if depth is not None:
        _cut_layer_lists(config, depth)
        _fold_layer_periods(config)
    _start_tokens(config)
    for name in ("first_k_dense_replace", "num_dense_layers"):
        _set_smaller(config, name, 1)
    _shrink_vision(config)


def _shrink_vision(config) -> None:
    """A small picture, small patches, two narrow blocks per stage; the stages themselves are kept."""
    size = getattr(config, "image_size", None)
    if isinstance(size, int) and size > IMAGE:
        _set(config, "image_size", IMAGE)
    elif isinstance(size, (list, tuple)) and len(size) == 2 and all(isinstance(v, int) and v > IMAGE for v in size):
        _set(config, "image_size", type(size)([IMAGE, IMAGE]))
    if getattr(config, "image_size", None) is not None:
        _set_smaller(config, "patch_size", PATCH)
    _set_smaller(config, "embedding_size", STAGE_WIDTH)
    _fit_windows(config)
    for name in STAGE_DEPTHS:
        value = getattr(config, name, None)
        if _int_list(value):
            _set(config, name, type(value)(min(v, 2) for v in value))  # a shifted-window stage needs its 2nd block
            # a stage count that reads as the depth (ConvNeXt maps num_hidden_layers to it) follows the list
            if isinstance(getattr(config, "num_stages", None), int):
                _set(config, "num_stages", len(value))
    for name in STAGE_WIDTHS:
        value = getattr(config, name, None)
        if _int_list(value) and len(value) > 1:
            _set(config, name, type(value)(min(v, STAGE_WIDTH * 2 ** i) for i, v in enumerate(value)))
    for name in STAGE_HEADS:
        value = getattr(config, name, None)
        if _int_list(value) and len(value) > 1:
            _set(config, name, type(value)(min(v, 2) for v in value))


def _fit_windows(config) -> None:
    """Windowed attention (Swin) sizes its position tables for the window it was built with, and the last stage
    of a real checkpoint is exactly one window (224 pixels, 4-pixel patches, 4 stages: 7x7): a window of 2 and a
    picture whose last stage is 2x2 keep that agreement at a small size."""
    window, depths, patch = (getattr(config, n, None) for n in ("window_size", "depths", "patch_size"))
    if isinstance(window, int) and window > 2 and _int_list(depths) and isinstance(patch, int):
        _set(config, "window_size", 2)
        _set(config, "image_size", patch * 2 * 2 ** (len(depths) - 1))


def _int_list(value) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value)


def _shrink_vocab(config) -> None:
    vocab = getattr(config, "vocab_size", None)
    if not isinstance(vocab, int) or vocab <= VOCAB:
        return
    _set(config, "vocab_size", VOCAB)
    for name in TOKEN_IDS:
        value = getattr(config, name, None)
        if isinstance(value, int) and value >= VOCAB:
            _set(config, name, VOCAB - 1 - TOKEN_IDS.index(name))
        elif isinstance(value, list):
            _set(config, name, [v if v < VOCAB else VOCAB - 1 for v in value if isinstance(v, int)])


def _cut_layer_lists(config, depth: int) -> None:
    """Per-layer lists follow the depth; a hybrid keeps one layer of each kind it has (the first of each), so
    the tiny model still runs every kind of layer, and its depth grows to that count when it must."""
    kept = None
    for name in LAYER_LISTS:
        value = getattr(config, name, None)
        if isinstance(value, (list, tuple, str)) and len(value) == depth:
            kept = kept or _one_of_each(value)
            cut = [value[i] for i in kept]
            _set(config, name, "".join(cut) if isinstance(value, str) else type(value)(cut))
    indices = getattr(config, "attn_layer_indices", None)
    if isinstance(indices, list) and indices:
        kept = kept or sorted({0, indices[0]}) if indices[0] < depth else kept
        _set(config, "attn_layer_indices", [kept.index(i) for i in (kept or []) if i in indices] or [0])
    if kept is not None and len(kept) != LAYERS:
        for name in DEPTH:
            if isinstance(getattr(config, name, None), int):
                _set(config, name, len(kept))


def _agree_head_dims(config) -> None:
    """Sizes defined against each other: a rotary slice no wider than a head; with multi-head latent attention
    (``qk_rope_head_dim``), ``head_dim`` is the rotary part, as the DeepSeek family defines it."""
    rope = getattr(config, "qk_rope_head_dim", None)
    if isinstance(rope, int) and isinstance(getattr(config, "head_dim", None), int):
        _set(config, "head_dim", rope)
    head = getattr(config, "head_dim", None) if isinstance(getattr(config, "head_dim", None), int) else HEAD_DIM
    for name in ("rotary_dim", "rotary_emb_dim", "rope_dim"):
        _set_smaller(config, name, head // 2)


def _fold_layer_periods(config) -> None:
    """``attn_layer_period=8, attn_layer_offset=4`` (one attention layer in eight) would leave none in two
    layers: the period folds to the tiny depth, so every kind of layer is still there."""
    for name in [n for n in vars(config) if n.endswith("_layer_period")]:
        period = getattr(config, name)
        offset_name = name.replace("_period", "_offset")
        if isinstance(period, int) and period > LAYERS:
            _set(config, name, LAYERS)
            offset = getattr(config, offset_name, None)
            if isinstance(offset, int):
                _set(config, offset_name, offset % LAYERS)


def _start_tokens(config) -> None:
    """An encoder-decoder generates from ``decoder_start_token_id``, which real checkpoints set in their
    config.json and the config class leaves out: the pad token (or 0) stands in, as in T5's checkpoints."""
    if getattr(config, "is_encoder_decoder", False) and getattr(config, "decoder_start_token_id", None) is None:
        _set(config, "decoder_start_token_id", getattr(config, "pad_token_id", None) or 0)


def _one_of_each(kinds) -> list[int]:
    """Indices of LAYERS layers or more: the first layer of each kind, then the first layers."""
    firsts = sorted({kinds.index(kind) for kind in dict.fromkeys(kinds)})
    extra = [i for i in range(len(kinds)) if i not in firsts]
    return sorted(firsts + extra[: max(0, LAYERS - len(firsts))])


def _first(config, names):
    return next((getattr(config, n) for n in names if isinstance(getattr(config, n, None), int)), None)


def _set_all(config, names, value) -> None:
    for name in names:
        if isinstance(getattr(config, name, None), int):
            _set(config, name, value)


def _set_smaller(config, name, value) -> None:
    current = getattr(config, name, None)
    if isinstance(current, int) and not isinstance(current, bool) and current > value:
        _set(config, name, value)


def _set(config, name, value) -> None:
    try:
        setattr(config, name, value)
    except (AttributeError, TypeError):  # a field the config derives from others (a property without a setter)
        pass


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
