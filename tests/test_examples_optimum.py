"""The bundled optimum-neuron examples: each migrates in one run with nothing left unmarked, and
the migrated programs run on the CPU emulator of the neuron device against the installed
transformers / TRL / PEFT (SFT trains 3 steps and saves its adapter; generation returns tokens)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from test_corpus import unmarked_legacy_references
from test_examples import _env
from tiny import save_tiny_llama

pytestmark = pytest.mark.slow

EXAMPLES = ROOT / "examples"


def _migrate(name: str, tmp_path):
    project = tmp_path / name
    shutil.copytree(EXAMPLES / name, project)
    first = subprocess.run(
        [sys.executable, "-m", "neuron_migrate", "rewrite", str(project)],
        cwd=tmp_path, env=_env(ROOT), capture_output=True, text=True, timeout=300,
    )
    assert first.returncode == 1, first.stdout + first.stderr
    again = subprocess.run(
        [sys.executable, "-m", "neuron_migrate", "rewrite", "--check", str(project)],
        cwd=tmp_path, env=_env(ROOT), capture_output=True, text=True, timeout=300,
    )
    assert again.returncode == 0, "a second run still changes something:\n" + again.stdout
    for path in project.glob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert "optimum" not in source.split('"""', 2)[-1].replace("optimum-neuron", ""), path.name
        assert not unmarked_legacy_references(source), path.name
    return project


def _emulate(project, script: str, *args: str, timeout: int = 600):
    return subprocess.run(
        [sys.executable, "-m", "neuron_migrate", "emulate", script, *args],
        cwd=project, env=_env(ROOT), capture_output=True, text=True, timeout=timeout,
    )


def test_migrated_sft_example_trains_three_steps_on_the_device(tmp_path):
    project = _migrate("optimum-sft", tmp_path)
    model = save_tiny_llama(tmp_path / "tiny-llama")
    run = _emulate(
        project, "train.py",
        "--model_id", model,
        "--output_dir", str(tmp_path / "adapter"),
        "--max_steps", "3",
        "--per_device_train_batch_size", "2",
        "--max_seq_length", "32",
        "--lora_r", "4",
        "--torch_compile", "true",
        "--torch_compile_backend", "neuron",
        "--report_to", "none",
        "--logging_steps", "1",
        "--save_strategy", "no",
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert output.count("'loss'") == 3, "one loss log per step:\n" + output
    assert (tmp_path / "adapter" / "adapter_config.json").exists(), output
    assert "LoRA adapter saved" in output


def test_migrated_generate_example_returns_tokens_on_the_device(tmp_path):
    project = _migrate("optimum-inference", tmp_path)
    source = project / "generate.py"
    # One process: tensor parallelism over 2 cores needs torchrun; the rest of the program is the migrated one.
    text = source.read_text(encoding="utf-8")
    assert "DistributedConfig(tp_size=2)" in text
    source.write_text(text.replace(", distributed_config=DistributedConfig(tp_size=2)", ', device_map="neuron"'))
    model = save_tiny_llama(tmp_path / "tiny-llama")
    run = _emulate(
        project, "generate.py",
        "--model", model, "--save-dir", str(tmp_path / "saved"), "--prompt", "hello world", "--max-new-tokens", "4",
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    printed = run.stdout.strip().splitlines()[-1]
    assert printed.startswith("hello world") and len(printed.split()) > 2, output



LEGACY_INFERENCE = """\
import argparse

from transformers import AutoTokenizer

from optimum.neuron import NeuronModelForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("--model")
args = parser.parse_args()
tokenizer = AutoTokenizer.from_pretrained(args.model)
model = NeuronModelForCausalLM.from_pretrained(args.model, export=True, batch_size=1, sequence_length=64)
inputs = tokenizer("hello world", return_tensors="pt")
next_token = int(model(**inputs).logits[0, -1].argmax())
ids = tokenizer.encode("the cat sat", return_tensors="pt")
outputs = model.generate(input_ids=ids, max_new_tokens=6, do_sample=False)
print(next_token, tokenizer.decode(outputs[0], skip_special_tokens=True))
"""


def test_migrated_inference_script_computes_on_the_device_what_the_stock_script_computes_on_the_cpu(tmp_path):
    """optimum-neuron's compiled models took CPU tensors; the migrated model runs on the device, so the
    tokenizer's tensors must follow it (NM308), or the forward fails with a device mismatch. The
    migrated script's tokens on the emulated device are those of the same stock script on the CPU."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "infer.py").write_text(LEGACY_INFERENCE)
    rewrite = subprocess.run(
        [sys.executable, "-m", "neuron_migrate", "rewrite", str(project)],
        cwd=tmp_path, env=_env(ROOT), capture_output=True, text=True, timeout=300,
    )
    assert rewrite.returncode == 1, rewrite.stdout + rewrite.stderr
    migrated = (project / "infer.py").read_text()
    assert "model(**inputs.to(model.device))" in migrated and "input_ids=ids.to(model.device)" in migrated
    assert not unmarked_legacy_references(migrated)
    (project / "infer_cpu.py").write_text(migrated.replace('device_map="neuron"', 'device_map="cpu"'))
    model = save_tiny_llama(tmp_path / "tiny-llama")
    device = _emulate(project, "infer.py", "--model", model)
    assert device.returncode == 0, device.stdout + device.stderr
    cpu = subprocess.run(
        [sys.executable, "infer_cpu.py", "--model", model],
        cwd=project, env=_env(ROOT), capture_output=True, text=True, timeout=600,
    )
    assert cpu.returncode == 0, cpu.stdout + cpu.stderr
    computed = device.stdout.strip().splitlines()[-1]
    assert computed == cpu.stdout.strip().splitlines()[-1]
    assert computed.split(" ", 1)[1].startswith("the cat sat") and len(computed.split()) > 4, computed


# The shape of the most common optimum-neuron SFT script: the script's own dataclass parsed next to
# NeuronTrainingArguments, the model loaded under lazy_load_for_parallelism with the parsed tensor-parallel
# size, and NeuronSFTConfig built from the parsed arguments' dict.
LEGACY_SFT_TEMPLATE = """\
from dataclasses import dataclass, field

from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer

from optimum.neuron import NeuronHfArgumentParser as HfArgumentParser
from optimum.neuron import NeuronSFTConfig, NeuronSFTTrainer, NeuronTrainingArguments
from optimum.neuron.distributed import lazy_load_for_parallelism


@dataclass
class ScriptArguments:
    model_id: str = field(default="", metadata={"help": "checkpoint to fine-tune"})


def training_function(script_args, training_args):
    tokenizer = AutoTokenizer.from_pretrained(script_args.model_id)
    dataset = Dataset.from_dict({"text": ["the cat sat on the mat", "hello world good answer"] * 4})
    with lazy_load_for_parallelism(tensor_parallel_size=training_args.tensor_parallel_size):
        model = AutoModelForCausalLM.from_pretrained(script_args.model_id)
    args = training_args.to_dict()
    sft_config = NeuronSFTConfig(max_seq_length=16, packing=False, **args)
    trainer = NeuronSFTTrainer(model=model, args=sft_config, train_dataset=dataset, tokenizer=tokenizer)
    trainer.train()
    print("trained with tensor parallel size", training_args.tensor_parallel_size)


def main():
    parser = HfArgumentParser([ScriptArguments, NeuronTrainingArguments])
    script_args, training_args = parser.parse_args_into_dataclasses()
    training_function(script_args, training_args)


if __name__ == "__main__":
    main()
"""
LEGACY_SFT_LAUNCH = """\
#!/bin/bash
torchrun --nproc_per_node 1 train.py --model_id MODEL --tensor_parallel_size 1 --zero_1 true \\
    --output_dir OUT --max_steps 1 --per_device_train_batch_size 2 --report_to none --save_strategy no --logging_steps 1
"""


def test_the_common_sft_template_trains_a_step_on_the_device_with_its_migrated_launch_line(tmp_path):
    """No read of a field the stock arguments lack survives the migration: the parsed tensor-parallel size
    moves into ScriptArguments, whose flag the migrated launch line keeps, and the script trains a step."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(LEGACY_SFT_TEMPLATE)
    (project / "run.sh").write_text(LEGACY_SFT_LAUNCH)
    rewrite = subprocess.run(
        [sys.executable, "-m", "neuron_migrate", "rewrite", str(project)],
        cwd=tmp_path, env=_env(ROOT), capture_output=True, text=True, timeout=300,
    )
    assert rewrite.returncode == 1, rewrite.stdout + rewrite.stderr
    migrated = (project / "train.py").read_text()
    assert "training_args.tensor_parallel_size" not in migrated and not unmarked_legacy_references(migrated)
    assert "DistributedConfig(tp_size=script_args.tensor_parallel_size)" in migrated
    launch = (project / "run.sh").read_text()
    words = " ".join(line.rstrip("\\") for line in launch.splitlines() if not line.startswith("#")).split()
    args = words[words.index("train.py") + 1 :]
    assert "--tensor_parallel_size" in args and "--zero_1" not in args and "--torch_compile_backend" in args
    model = save_tiny_llama(tmp_path / "tiny-llama")
    args = [{"MODEL": model, "OUT": str(tmp_path / "out")}.get(word, word) for word in args]
    run = _emulate(project, "train.py", *args)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert output.count("'loss'") == 1, "one loss log for the one step:\n" + output
    assert "trained with tensor parallel size 1" in output
