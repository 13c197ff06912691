"""A legacy PyTorch/XLA generation script: greedy decoding with a tiny Llama built from a config."""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

import torch_xla.core.xla_model as xm


def main():
    device = xm.xla_device()
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    model = LlamaForCausalLM(config).eval().to(device)
    prompt = torch.tensor([[1, 17, 42, 7, 99]]).to(device)
    tokens = model.generate(prompt, max_new_tokens=8, do_sample=False, pad_token_id=0)
    xm.mark_step()
    print("tokens", tokens.cpu().tolist())


if __name__ == "__main__":
    main()
