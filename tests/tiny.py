"""Tiny models and tokenizers built in code, so no test downloads anything."""

from __future__ import annotations

from pathlib import Path

WORDS = (
    "the a cat dog sat on mat hello world good bad answer question instruction response explain summarize "
    "give one tip about describe pitfall of say why we use matters because it changes memory speed or numerics "
    "measure before and after tensor parallelism gradient checkpointing lora adapters bf16 training static shapes "
    "compile caches torchrun data loaders learning-rate warmup checkpoint sharding kv padding"
).split()


def word_tokenizer(words=WORDS, model_max_length: int = 128):
    """A word-level fast tokenizer with <s>, <pad>, </s> and <unk>."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(dict.fromkeys(["<s>", "<pad>", "</s>", "<unk>", *words]))}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        model_max_length=model_max_length,
    )


def save_tiny_llama(folder: Path, *, with_tokenizer: bool = True) -> str:
    """A 2-layer Llama with hidden size 64 (and its tokenizer), saved to ``folder``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    tokenizer = word_tokenizer()
    config = LlamaConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    LlamaForCausalLM(config).save_pretrained(folder)
    if with_tokenizer:
        tokenizer.save_pretrained(folder)
    return str(folder)
