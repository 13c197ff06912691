"""A legacy Trainer run on PyTorch/XLA: transformers' own Trainer takes its XLA code path when torch_xla is
installed (it steps through xm.optimizer_step and marks steps itself)."""

import torch
from torch.utils.data import Dataset
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

import torch_xla.core.xla_model as xm


class Tokens(Dataset):
    def __init__(self):
        self.ids = torch.randint(1, 96, (64, 16), generator=torch.Generator().manual_seed(1))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, index):
        return {"input_ids": self.ids[index], "labels": self.ids[index]}


def main():
    print("device", xm.xla_device())
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
    # adamw_torch: the fused AdamW that newer transformers pick by default has no XLA kernel
    args = TrainingArguments(output_dir="out", per_device_train_batch_size=4, max_steps=6, learning_rate=1e-3,
                             logging_steps=1, report_to=[], save_strategy="no", seed=0, optim="adamw_torch")
    Trainer(model=LlamaForCausalLM(config), args=args, train_dataset=Tokens()).train()


if __name__ == "__main__":
    main()
