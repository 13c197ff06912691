"""The tiny diffusers models a card is made of: per class, the config fields that make it tiny and what it
reads (latents as pictures or as token sequences, text embeddings, pooled embeddings, position ids), since that
differs from class to class. No torch here: the input makers are handed torch by the card that calls them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

BATCH = 2
TEXT_TOKENS = 8
TIMESTEPS = (999, 749, 499, 249)  # one schedule of a sampling loop, as a pipeline walks it


@dataclass(frozen=True)
class Recipe:
    tiny: dict[str, Any]  # the config fields that make the model tiny
    inputs: Callable  # (config, torch, generator) -> the model's inputs but the timestep
    output: str = "sample"  # the field of the model's output that a loss reads
    integer_timestep: bool = False  # the model takes integer timesteps (DDPM-style), else floats


def _latents(config, torch, generator, frames: int = 0):
    size = config.sample_size if isinstance(config.sample_size, int) else config.sample_size[0]
    shape = (BATCH, config.in_channels, *((frames,) if frames else ()), size, size)
    return torch.randn(shape, generator=generator)


def _text(width: int, torch, generator):
    return torch.randn(BATCH, TEXT_TOKENS, width, generator=generator)


def _unet(config, torch, generator):
    return {"sample": _latents(config, torch, generator),
            "encoder_hidden_states": _text(config.cross_attention_dim, torch, generator)}


def _sd3(config, torch, generator):
    return {"hidden_states": _latents(config, torch, generator),
            "encoder_hidden_states": _text(config.joint_attention_dim, torch, generator),
            "pooled_projections": torch.randn(BATCH, config.pooled_projection_dim, generator=generator)}


def _flux(config, torch, generator):
    # latents packed as a sequence of 2x2 patches (4 x 4 of them here), with their (0, row, column) ids
    side = 4
    ids = torch.zeros(side * side, 3)
    ids[:, 1] = torch.arange(side).repeat_interleave(side)
    ids[:, 2] = torch.arange(side).repeat(side)
    return {"hidden_states": torch.randn(BATCH, side * side, config.in_channels, generator=generator),
            "encoder_hidden_states": _text(config.joint_attention_dim, torch, generator),
            "pooled_projections": torch.randn(BATCH, config.pooled_projection_dim, generator=generator),
            "img_ids": ids, "txt_ids": torch.zeros(TEXT_TOKENS, 3)}


def _pixart(config, torch, generator):
    return {"hidden_states": _latents(config, torch, generator),
            "encoder_hidden_states": _text(config.caption_channels, torch, generator),
            "added_cond_kwargs": {"resolution": None, "aspect_ratio": None}}


def _dit(config, torch, generator):
    return {"hidden_states": _latents(config, torch, generator),
            "class_labels": torch.randint(0, config.num_embeds_ada_norm, (BATCH,), generator=generator)}


def _sana(config, torch, generator):
    return {"hidden_states": _latents(config, torch, generator),
            "encoder_hidden_states": _text(config.caption_channels, torch, generator)}


def _wan(config, torch, generator):
    shape = (BATCH, config.in_channels, 2, 8, 8)  # two latent frames of 8 x 8
    return {"hidden_states": torch.randn(shape, generator=generator),
            "encoder_hidden_states": _text(config.text_dim, torch, generator)}


# class name -> its tiny config and inputs (widths 32-64, two blocks, 8 x 8 latents, 8 text tokens)
RECIPES: dict[str, Recipe] = {
    "UNet2DConditionModel": Recipe(
        {"sample_size": 8, "in_channels": 4, "out_channels": 4, "block_out_channels": (32, 64),
         "layers_per_block": 1, "down_block_types": ("CrossAttnDownBlock2D", "DownBlock2D"),
         "up_block_types": ("UpBlock2D", "CrossAttnUpBlock2D"), "cross_attention_dim": 32, "attention_head_dim": 8,
         "norm_num_groups": 8, "addition_embed_type": None, "class_embed_type": None,
         "transformer_layers_per_block": 1},
        _unet, integer_timestep=True),
    "SD3Transformer2DModel": Recipe(
        {"sample_size": 8, "patch_size": 2, "in_channels": 4, "out_channels": 4, "num_layers": 2,
         "attention_head_dim": 8, "num_attention_heads": 4, "joint_attention_dim": 32, "caption_projection_dim": 32,
         "pooled_projection_dim": 64, "pos_embed_max_size": 16, "dual_attention_layers": ()},
        _sd3),
    "FluxTransformer2DModel": Recipe(
        {"patch_size": 1, "in_channels": 16, "out_channels": None, "num_layers": 1, "num_single_layers": 1,
         "attention_head_dim": 16, "num_attention_heads": 2, "joint_attention_dim": 32, "pooled_projection_dim": 32,
         "guidance_embeds": False, "axes_dims_rope": (4, 4, 8)},
        _flux),
    "PixArtTransformer2DModel": Recipe(
        {"num_attention_heads": 2, "attention_head_dim": 16, "in_channels": 4, "out_channels": 8, "num_layers": 2,
         "cross_attention_dim": 32, "sample_size": 8, "patch_size": 2, "caption_channels": 32,
         "use_additional_conditions": False},
        _pixart),
    "DiTTransformer2DModel": Recipe(
        {"num_attention_heads": 2, "attention_head_dim": 16, "in_channels": 4, "out_channels": 8, "num_layers": 2,
         "sample_size": 8, "patch_size": 2, "num_embeds_ada_norm": 10},
        _dit, integer_timestep=True),
    "SanaTransformer2DModel": Recipe(
        {"in_channels": 4, "out_channels": 4, "num_attention_heads": 2, "attention_head_dim": 16, "num_layers": 2,
         "num_cross_attention_heads": 2, "cross_attention_head_dim": 16, "cross_attention_dim": 32,
         "caption_channels": 32, "sample_size": 8, "patch_size": 1},
        _sana),
    "WanTransformer3DModel": Recipe(
        {"patch_size": (1, 2, 2), "num_attention_heads": 2, "attention_head_dim": 16, "in_channels": 4,
         "out_channels": 4, "text_dim": 32, "freq_dim": 32, "ffn_dim": 64, "num_layers": 2, "rope_max_seq_len": 32},
        _wan),
}
