"""What a card feeds a tiny model: token ids for a language model, a picture for a vision model; the same
inputs plus labels for a training step, whose loss the model computes itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from neuron_migrate.analyzers.models.tiny import IMAGE

PROMPT_TOKENS = 16
MAX_TOKEN = 500  # token ids are drawn from 3 (past the special tokens) to this or the tiny vocabulary


@dataclass
class Inputs:
    forward: dict[str, Any]  # one forward pass
    train: dict[str, Any]  # a training step: the forward's inputs with labels
    prompt: Any = None  # the token ids generate() starts from; None where the model reads no text


def model_inputs(model, device: str = "neuron") -> Inputs:
    """The inputs of ``model`` by what it reads first (``main_input_name``), on ``device``, from a fixed seed."""
    import torch

    generator = torch.Generator().manual_seed(0)
    if getattr(model, "main_input_name", "input_ids") == "pixel_values":
        # two pictures: batch norm in training needs more than one value per channel, and the tiny picture is
        # a pixel or two at the end of a ResNet
        picture = torch.randn(2, *_picture_shape(model.config), generator=generator).to(device)
        labels = torch.tensor([0, 1]).to(device)
        return Inputs({"pixel_values": picture}, {"pixel_values": picture, "labels": labels})
    vocab = min(model.config.get_text_config().vocab_size, MAX_TOKEN)
    ids = torch.randint(3, vocab, (1, PROMPT_TOKENS), generator=generator).to(device)
    # an encoder-decoder's forward needs the decoder's tokens too (training derives them from the labels)
    decoder = {"decoder_input_ids": ids} if getattr(model.config, "is_encoder_decoder", False) else {}
    if type(model).__name__.endswith("ForImageClassification"):  # ImageGPT reads pixel clusters as tokens
        return Inputs({"input_ids": ids}, {"input_ids": ids, "labels": torch.tensor([1]).to(device)})
    return Inputs({"input_ids": ids, **decoder}, {"input_ids": ids, "labels": ids}, prompt=ids)


def _picture_shape(config) -> tuple[int, int, int]:
    size = getattr(config, "image_size", None) or IMAGE
    height, width = (size, size) if isinstance(size, int) else tuple(size)[:2]
    return (getattr(config, "num_channels", None) or 3, height, width)
