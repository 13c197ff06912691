"""A legacy PyTorch/XLA fine-tuning loop: a tiny Llama built from a config, token batches made in code."""

import torch
from torch.utils.data import DataLoader, TensorDataset
from transformers import LlamaConfig, LlamaForCausalLM

import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl


def main():
    device = xm.xla_device()
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
    model = LlamaForCausalLM(config).to(device)
    tokens = torch.randint(1, 96, (64, 16), generator=torch.Generator().manual_seed(1))
    loader = pl.MpDeviceLoader(DataLoader(TensorDataset(tokens), batch_size=4, shuffle=True), device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    model.train()
    for (batch,) in loader:
        outputs = model(input_ids=batch, labels=batch)
        outputs.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        xm.optimizer_step(optimizer)
        optimizer.zero_grad()
        xm.mark_step()


if __name__ == "__main__":
    main()
