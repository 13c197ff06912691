"""--from cuda: the CUDA rules run only when asked for, through every way a run is configured."""

from __future__ import annotations

import subprocess
import sys

from neuron_migrate.config import load_config
from neuron_migrate.migrate.engine import RulePlan, migrate_python
from neuron_migrate.migrate.runner import run
from neuron_migrate.ruleapi import all_rules

CUDA_SCRIPT = (
    "import torch\n\n"
    "model = torch.nn.Linear(4, 4).cuda()\n"
    "if torch.cuda.is_available():\n"
    "    torch.cuda.synchronize()\n"
)
MIGRATED = (
    "import torch\n\n"
    "model = torch.nn.Linear(4, 4).to(torch.accelerator.current_accelerator())\n"
    "if torch.accelerator.is_available():\n"
    "    torch.accelerator.synchronize()\n"
)
CUDA_IDS = {rule.meta.id for rule in all_rules() if rule.source == "cuda"}


def test_the_cuda_rules_are_a_family_of_their_own():
    assert CUDA_IDS and all(rule_id.startswith("NM6") for rule_id in CUDA_IDS)
    assert {rule.source for rule in all_rules()} == {"legacy", "cuda"}


def test_without_the_switch_no_cuda_rule_is_in_the_plan():
    assert not CUDA_IDS & {rule.meta.id for rule in RulePlan.build().index.rules}
    # not even when selected by id: --select picks among the rules the run migrates from
    assert not RulePlan.build(select=("NM601",)).index.rules
    assert CUDA_IDS <= {rule.meta.id for rule in RulePlan.build(from_cuda=True).index.rules}


def test_a_cuda_file_is_left_alone_without_the_switch_and_migrated_with_it():
    assert migrate_python(CUDA_SCRIPT, "train.py", RulePlan.build()).code == CUDA_SCRIPT
    result = migrate_python(CUDA_SCRIPT, "train.py", RulePlan.build(from_cuda=True))
    assert result.code == MIGRATED
    # nothing of the legacy machinery speaks in a file with no legacy import
    assert {f.rule for f in result.findings} == {"NM601", "NM603"}


def test_select_and_ignore_pick_among_the_cuda_rules():
    only_devices = migrate_python(CUDA_SCRIPT, "train.py", RulePlan.build(select=("NM601",), from_cuda=True)).code
    assert ".to(torch.accelerator.current_accelerator())" in only_devices and "torch.cuda.synchronize()" in only_devices
    no_devices = migrate_python(CUDA_SCRIPT, "train.py", RulePlan.build(ignore=("NM601",), from_cuda=True)).code
    assert ".cuda()" in no_devices and "torch.accelerator.synchronize()" in no_devices


def test_the_run_lets_cuda_files_through_the_prefilter_only_with_the_switch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NEURON_MIGRATE_CACHE_DIR", str(tmp_path / "cache"))
    script = tmp_path / "train.py"
    script.write_text(CUDA_SCRIPT)
    # the cache is on: the second run must not reuse the first run's "unchanged"
    run([script], load_config([script], jobs=1))
    assert script.read_text() == CUDA_SCRIPT
    run([script], load_config([script], jobs=1, migrate_from="cuda"))
    assert script.read_text() == MIGRATED


def test_from_in_pyproject_turns_the_rules_on(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.neuron-migrate]\nfrom = "cuda"\ncache = false\n')
    script = tmp_path / "train.py"
    script.write_text(CUDA_SCRIPT)
    run([script], load_config([script], jobs=1))
    assert script.read_text() == MIGRATED


def test_the_cli_flag(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(CUDA_SCRIPT)
    command = [sys.executable, "-m", "neuron_migrate", "rewrite", "--no-cache", "-q"]
    subprocess.run([*command, str(script)], check=False, capture_output=True)
    assert script.read_text() == CUDA_SCRIPT
    stdin = subprocess.run([*command, "--from", "cuda", "-"], input=CUDA_SCRIPT, text=True, capture_output=True)
    assert stdin.stdout == MIGRATED
    subprocess.run([*command, "--from", "cuda", str(script)], check=False, capture_output=True)
    assert script.read_text() == MIGRATED


HF_SCRIPT = (
    "from torch.cuda.amp import GradScaler\n"
    "from transformers import AutoModelForCausalLM, TrainingArguments\n\n"
    'model = AutoModelForCausalLM.from_pretrained("m", device_map="auto", attn_implementation="flash_attention_2")\n'
    'arguments = TrainingArguments("out", fp16=True)\n'
    "scaler = GradScaler()\n"
    "scaler.scale(loss).backward()\n"
    "scaler.step(optimizer)\n"
    "scaler.update()\n"
)


def test_hugging_face_settings_and_the_scaler_move_only_with_the_switch():
    assert migrate_python(HF_SCRIPT, "train.py", RulePlan.build()).code == HF_SCRIPT
    code = migrate_python(HF_SCRIPT, "train.py", RulePlan.build(from_cuda=True)).code
    assert 'device_map=torch.accelerator.current_accelerator(), attn_implementation="sdpa"' in code
    assert 'TrainingArguments("out", bf16=True, torch_compile=True)' in code
    # the scaler, its calls and its import are gone; what it wrapped stays
    assert not [line for line in code.splitlines() if "scaler" in line.lower() and not line.startswith("#")]
    assert code.endswith("loss.backward()\noptimizer.step()\n")
    assert migrate_python(code, "train.py", RulePlan.build(from_cuda=True)).code == code


def test_a_scaler_whose_state_is_saved_is_kept_with_its_todo():
    script = HF_SCRIPT + 'torch.save(scaler.state_dict(), "scaler.pt")\n'
    code = migrate_python(script, "train.py", RulePlan.build(from_cuda=True)).code
    assert "TODO(neuron-migrate NM611)" in code and "scaler.scale(loss).backward()" in code
    assert code.startswith("from torch.cuda.amp import GradScaler\n")


RECIPE_SCRIPT = (
    "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n\n"
    'model = AutoModelForCausalLM.from_pretrained("m")\n'
    'arguments = TrainingArguments("out", per_device_train_batch_size=8)\n'
    "trainer = Trainer(model=model, args=arguments)\n"
    "output = model.generate(**inputs, max_new_tokens=16)\n"
)


def test_the_recipe_is_applied_to_a_stock_script_only_with_the_switch():
    assert migrate_python(RECIPE_SCRIPT, "train.py", RulePlan.build()).code == RECIPE_SCRIPT
    code = migrate_python(RECIPE_SCRIPT, "train.py", RulePlan.build(from_cuda=True)).code
    assert 'TrainingArguments("out", per_device_train_batch_size=8, torch_compile=True, bf16=True)' in code
    # no backend is spelled out: TrainingArguments picks "neuron" on the neuron device and inductor on a GPU
    assert "torch_compile_backend" not in code
    assert "torch._dynamo.config.automatic_dynamic_shapes = False\n" in code
    assert 'os.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1")\n' in code
    assert 'model.generate(**inputs, max_new_tokens=16, cache_implementation="static")' in code
    assert migrate_python(code, "train.py", RulePlan.build(from_cuda=True)).code == code


def test_the_recipe_keeps_what_the_script_already_chose():
    script = (
        "from trl import SFTConfig\n\n"
        'config = SFTConfig("out", torch_compile=False, fp16=False, max_length=1024, pad_to_multiple_of=64)\n'
        'cpu = SFTConfig("out", use_cpu=True)\n'
    )
    assert migrate_python(script, "train.py", RulePlan.build(from_cuda=True)).code == script


def test_the_recipe_drops_a_padding_that_turns_trl_s_default_off():
    script = 'from trl import SFTConfig\n\nconfig = SFTConfig("out", bf16=True, torch_compile=True, pad_to_multiple_of=None)\n'
    code = migrate_python(script, "train.py", RulePlan.build(from_cuda=True)).code
    assert code.endswith('config = SFTConfig("out", bf16=True, torch_compile=True)\n')


def test_device_defaults_computed_at_import_still_import_without_an_accelerator():
    """A default or module setting runs at import: on a CPU-only machine (a laptop, CI) the migrated module must
    import as the CUDA one did, and only fail, or fall back, where it is used."""
    import torch

    source = (
        "import argparse\n\nimport torch\n\n"
        "DEVICE = torch.device('cuda')\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--device', default='cuda')\n\n\n"
        "def loader(data, device: torch.device = torch.device('cuda'), name='cuda:0', other='cuda'):\n"
        "    return data\n\n\n"
        "class Prefetch:\n"
        "    def __init__(self, device=torch.device('cuda')):\n"
        "        self.device = device\n"
    )
    migrated = migrate_python(source, "loader.py", RulePlan.build(from_cuda=True)).code
    assert "torch.device('cuda')" not in migrated and "current_accelerator()" in migrated
    assert torch.accelerator.current_accelerator() is None  # the default lane runs where there is no accelerator
    namespace: dict = {"__name__": "loader"}
    exec(compile(migrated, "loader.py", "exec"), namespace)
    assert namespace["DEVICE"] is None and namespace["loader"]([1]) == [1]
