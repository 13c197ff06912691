"""Fine-tune a causal LM with LoRA on Trainium with optimum-neuron's NeuronSFTTrainer.

Launch with ``run.sh`` (torchrun, one process per NeuronCore). The defaults follow optimum-neuron's
LoRA fine-tuning recipe: tensor parallelism over 2 cores, packed sequences of 1024 tokens, bf16.
"""

from dataclasses import dataclass, field

import torch
from datasets import load_dataset
from peft import LoraConfig
from transformers import AutoTokenizer

from optimum.neuron import NeuronHfArgumentParser as HfArgumentParser
from optimum.neuron import NeuronSFTConfig, NeuronSFTTrainer, NeuronTrainingArguments
from optimum.neuron.models.training import NeuronModelForCausalLM
from optimum.neuron.utils import is_main_worker


@dataclass
class ScriptArguments:
    model_id: str = field(default="meta-llama/Llama-3.2-1B", metadata={"help": "checkpoint to fine-tune"})
    data_file: str = field(default="data/instructions.jsonl", metadata={"help": "JSON lines with instruction/response"})
    max_seq_length: int = field(default=1024)
    lora_r: int = field(default=16)


def format_example(example):
    return f"### Instruction\n{example['instruction']}\n\n### Response\n{example['response']}"


def train(script_args, training_args):
    dataset = load_dataset("json", data_files=script_args.data_file, split="train")

    tokenizer = AutoTokenizer.from_pretrained(script_args.model_id)
    tokenizer.pad_token = tokenizer.eos_token

    trn_config = training_args.trn_config
    dtype = torch.bfloat16 if training_args.bf16 else torch.float32
    model = NeuronModelForCausalLM.from_pretrained(
        script_args.model_id,
        trn_config,
        torch_dtype=dtype,
        # the NKI flash-attention kernel of optimum-neuron
        attn_implementation="flash_attention_2",
    )

    lora_config = LoraConfig(
        r=script_args.lora_r,
        lora_alpha=2 * script_args.lora_r,
        lora_dropout=0.05,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
        bias="none",
        task_type="CAUSAL_LM",
    )

    sft_config = NeuronSFTConfig(
        max_seq_length=script_args.max_seq_length,
        packing=False,
        **training_args.to_dict(),
    )

    trainer = NeuronSFTTrainer(
        model=model,
        args=sft_config,
        train_dataset=dataset,
        peft_config=lora_config,
        tokenizer=tokenizer,
        formatting_func=format_example,
    )
    trainer.train()
    trainer.save_model()
    if is_main_worker():
        print(f"LoRA adapter saved to {training_args.output_dir}")


def main():
    parser = HfArgumentParser((ScriptArguments, NeuronTrainingArguments))
    script_args, training_args = parser.parse_args_into_dataclasses()
    train(script_args, training_args)


if __name__ == "__main__":
    main()
