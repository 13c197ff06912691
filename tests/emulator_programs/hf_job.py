"""The transformers / TRL / PEFT scenarios, run once on ``cpu`` and once on the emulated ``neuron`` device.

Usage: ``hf_job.py DEVICE OUT.json WORKDIR``. Everything is built offline: a word-level tokenizer trained in code
and a random 2-layer Llama (hidden 64). The results (logits, tokens, losses, facts about the code paths taken)
go to OUT.json for the test to compare.
"""

import json
import os
import sys

import torch

DEVICE, OUT, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
TEXTS = [
    "the quick brown fox jumps over the lazy dog",
    "a small model learns to copy short sentences",
    "neuron devices run compiled graphs of the model",
    "hello world this is a tiny training set",
] * 4


def tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(TEXTS, trainers.WordLevelTrainer(special_tokens=["<pad>", "<s>", "</s>", "<unk>"]))
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 1), ("</s>", 2)])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>"
    )


def tiny_llama(tok):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128, pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config)


def train_steps(model, batch, steps=3):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = model(**batch, labels=batch["input_ids"]).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    return losses


def sft(tok, model_dir, compile_, lora):
    import datasets
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    model = AutoModelForCausalLM.from_pretrained(model_dir)
    extra = {}
    if lora:
        from peft import LoraConfig

        extra["peft_config"] = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0)
    args = SFTConfig(
        output_dir=os.path.join(WORK, f"sft-{compile_}-{lora}"), max_steps=3, per_device_train_batch_size=4,
        learning_rate=1e-3, logging_steps=1, report_to="none", save_strategy="no", max_length=32,
        dataset_text_field="text", dataloader_pin_memory=False, bf16=False, torch_compile=compile_,
        # the same compiler stack on both devices: on cpu the eager backend, on neuron the neuron backend
        **({"torch_compile_backend": "eager"} if compile_ and DEVICE == "cpu" else {}),
        use_cpu=DEVICE == "cpu", seed=0,
    )
    trainer = SFTTrainer(
        model=model, args=args, train_dataset=datasets.Dataset.from_dict({"text": TEXTS}), processing_class=tok,
        **extra,
    )
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    facts = {
        "device": str(trainer.args.device),
        "backend": trainer.args.torch_compile_backend,
        "pad_to_multiple_of": getattr(trainer.args, "pad_to_multiple_of", None),
        "param_device": str(next(trainer.model.parameters()).device),
    }
    if lora:
        out = os.path.join(WORK, f"lora-{DEVICE}")
        trainer.model.save_pretrained(out)
        facts["adapter_files"] = sorted(os.listdir(out))
    return losses, facts


def main():
    from transformers import AutoModelForCausalLM

    results = {}
    tok = tokenizer()
    model_dir = os.path.join(WORK, "tiny-llama")
    if not os.path.exists(model_dir):
        tiny_llama(tok).save_pretrained(model_dir)
    batch = tok(TEXTS[:2], return_tensors="pt", padding=True)

    model = AutoModelForCausalLM.from_pretrained(model_dir, device_map=DEVICE)
    results["param_device"] = str(next(model.parameters()).device)
    on_device = {k: v.to(DEVICE) for k, v in batch.items()}
    with torch.no_grad():
        results["logits"] = model(**on_device).logits.cpu().flatten()[:256].tolist()
    prompt = tok(["hello world"], return_tensors="pt").to(DEVICE)
    generated = model.generate(**prompt, max_new_tokens=6, do_sample=False, cache_implementation="static")
    results["generated"] = generated.cpu().tolist()
    results["decoded"] = tok.batch_decode(generated)

    results["eager_losses"] = train_steps(model, on_device)
    saved = os.path.join(WORK, f"saved-{DEVICE}")
    model.save_pretrained(saved)
    reloaded = AutoModelForCausalLM.from_pretrained(saved)
    with torch.no_grad():
        results["reloaded_logits"] = reloaded(**batch).logits.flatten()[:256].tolist()
    results["saved_files"] = sorted(os.listdir(saved))

    fresh = AutoModelForCausalLM.from_pretrained(model_dir).to(DEVICE)
    compiled = torch.compile(fresh, backend="neuron" if DEVICE == "neuron" else "eager")
    results["compiled_losses"] = train_steps(compiled, on_device)

    results["sft_losses"], results["sft"] = sft(tok, model_dir, compile_=True, lora=False)
    results["lora_losses"], results["lora"] = sft(tok, model_dir, compile_=False, lora=True)
    if DEVICE == "neuron":
        from neuron_migrate.analyzers.emulator import compiled_graphs

        results["graphs"] = len(compiled_graphs())
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
