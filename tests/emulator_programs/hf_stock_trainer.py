"""A stock Hugging Face fine-tuning script as it is written for a GPU: TrainingArguments, Trainer, generate().

Usage: ``hf_stock_trainer.py OUT.json WORKDIR``. Offline: a word-level tokenizer trained in code and a random
2-layer Llama built from its config. What the run took (device, compile backend, precision, losses, generated
tokens) goes to OUT.json.
"""

import json
import os
import sys

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast, Trainer, TrainingArguments

OUT, WORK = sys.argv[1], sys.argv[2]
TEXTS = ["the cat sat on the mat", "a dog ran in the park", "birds fly over the sea", "fish swim in the lake"] * 4


def build_tokenizer():
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(TEXTS, trainers.WordLevelTrainer(special_tokens=["<pad>", "<s>", "</s>", "<unk>"]))
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>")


class Rows(torch.utils.data.Dataset):
    def __init__(self, tok):
        self.rows = [tok(text, padding="max_length", max_length=8, truncation=True) for text in TEXTS]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, index):
        row = self.rows[index]
        return {"input_ids": row["input_ids"], "attention_mask": row["attention_mask"], "labels": row["input_ids"]}


def main():
    tok = build_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    arguments = TrainingArguments(
        output_dir=os.path.join(WORK, "out"),
        max_steps=4,
        per_device_train_batch_size=4,
        learning_rate=1e-2,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        dataloader_pin_memory=False,
        seed=0,
    )
    trainer = Trainer(model=model, args=arguments, train_dataset=Rows(tok))
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    inputs = tok(["the cat"], return_tensors="pt").to("cuda")
    generated = model.generate(**inputs, max_new_tokens=4, do_sample=False)
    result = {
        "device": str(trainer.args.device),
        "param_device": str(next(model.parameters()).device),
        "torch_compile": trainer.args.torch_compile,
        "backend": trainer.args.torch_compile_backend,
        "bf16": trainer.args.bf16,
        "losses": losses,
        "generated": generated.tolist(),
    }
    with open(OUT, "w") as handle:
        json.dump(result, handle)


if __name__ == "__main__":
    main()
