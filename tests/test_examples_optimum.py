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
