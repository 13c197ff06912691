"""The bundled legacy example (``examples/xla-training``): it is a working program as shipped, and
the command line migrates a copy of it in one run and leaves a second run nothing to do.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from neuron_migrate.migrate.discover import kind_of
from test_corpus import unmarked_legacy_references

EXAMPLE = ROOT / "examples" / "xla-training"
STUBS = ROOT / "tests" / "stubs"
PYTHON_FILES = ("train.py", "utils.py")
# Variables a surrounding torchrun or CI job may have set; the example must start from scratch.
LAUNCHER_VARS = ("LOCAL_RANK", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_WORLD_SIZE")


def _copy_example(tmp_path):
    target = tmp_path / "xla-training"
    shutil.copytree(EXAMPLE, target)
    return target


def _migrated_example(tmp_path):
    """A copy of the example rewritten by the command line, and the environment that ran it."""
    project = _copy_example(tmp_path)
    env = _env(ROOT)
    assert _run(["-m", "neuron_migrate", "rewrite", str(project)], cwd=tmp_path, env=env).returncode == 1
    return project, env


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _env(*paths):
    """The current environment minus launcher variables, with ``paths`` first on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _run(args, cwd, env, timeout=300):
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.slow
def test_legacy_example_runs_against_the_torch_xla_stand_in(tmp_path):
    project = _copy_example(tmp_path)
    # The example imports its neighbour utils.py, so it runs from its own folder.
    env = _env(STUBS)
    args = ["train.py", "--epochs", "1", "--num-samples", "512", "--bf16", "--metrics", "--output-dir", "ckpt"]

    proc = _run(args, cwd=project, env=env)

    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "1 workers, device cpu" in output, "the run did not go through the stand-in torch_xla"
    assert "epoch 1 eval accuracy" in output
    assert "graphs compiled: 0" in output
    checkpoint = project / "ckpt" / "epoch-1.pt"
    assert checkpoint.exists()
    import torch

    state = torch.load(checkpoint, weights_only=True)
    assert state["epoch"] == 1 and "model" in state and "optimizer" in state


@pytest.mark.slow
def test_rewrite_migrates_the_example_in_one_run(tmp_path):
    if importlib.util.find_spec("neuron_migrate.cli") is None:
        pytest.skip("the neuron-migrate command line (neuron_migrate/cli.py) is not there yet")
    project = _copy_example(tmp_path)
    before = _snapshot(project)

    # neuron_migrate from this checkout, whether or not it is installed
    env = _env(ROOT)
    first = _run(["-m", "neuron_migrate", "rewrite", str(project)], cwd=tmp_path, env=env)

    assert first.returncode == 1, first.stdout + first.stderr
    # every file of a kind the tool reads: Python modules, notebooks, launchers, requirement files
    scanned = sum(1 for name in before if kind_of(name) is not None)
    assert f"files: {scanned} scanned," in first.stdout, first.stdout
    after = _snapshot(project)
    assert after["requirements.txt"] != before["requirements.txt"], "requirements.txt was not migrated"
    for name in PYTHON_FILES:
        assert after[name] != before[name], f"{name} was not rewritten"
        code = after[name].decode("utf-8")
        ast.parse(code)
        assert unmarked_legacy_references(code) == [], name
    # The launcher loses neuron_parallel_compile and PJRT_DEVICE (tests/test_shell.py has the details).
    assert b"neuron_parallel_compile torchrun" in before["run.sh"]
    assert b"neuron_parallel_compile torchrun" not in after["run.sh"] and b"PJRT_DEVICE" not in after["run.sh"]
    # The image: the base image gets a TODO, the XLA variables and the torch-xla install go.
    dockerfile = after["Dockerfile"].decode()
    assert "# TODO(neuron-migrate NM521):" in dockerfile and "PJRT_DEVICE" not in dockerfile
    assert "pip install --no-cache-dir 'torch>=2.13'" in dockerfile
    assert 'ENV NEURON_CC_FLAGS="--model-type=generic"\n' in dockerfile
    assert after["README.md"] == before["README.md"]
    assert os.access(project / "run.sh", os.X_OK)

    second = _run(["-m", "neuron_migrate", "rewrite", str(project)], cwd=tmp_path, env=env)

    assert second.returncode == 0, second.stdout + second.stderr
    assert _snapshot(project) == after


@pytest.mark.slow
def test_the_migrated_example_trains_on_the_emulated_device_with_no_hand_edits(tmp_path):
    # What the rewrite leaves is review markers, the compatibility shim, and NM502's TODO (the
    # bf16 switch of run.sh): none of it stops the program. `audit --run` starts it as one
    # torchrun process on the emulated device and reports what would recompile or sync.
    pytest.importorskip("torch")
    project, env = _migrated_example(tmp_path)
    code = (project / "train.py").read_text()
    assert 'inputs, labels = inputs.to("neuron"), labels.to("neuron")' in code
    assert "TODO(neuron-migrate" not in code

    run = _run(
        ["-m", "neuron_migrate", "audit", "--run", "train.py", "--format", "json", "--", "--epochs", "1"],
        cwd=project, env=env, timeout=600,
    )  # fmt: skip
    assert "epoch 1 eval accuracy" in run.stdout + run.stderr, run.stdout[-2000:] + run.stderr[-3000:]
    assert "the script exited" not in run.stderr
    assert (project / "checkpoints" / "epoch-1.pt").exists()


@pytest.mark.slow
def test_emulate_runs_the_migrated_example_as_one_torchrun_process(tmp_path):
    # As the README shows it: rewrite, then `neuron-migrate emulate train.py`, no torchrun in front. The
    # migrated script starts the "neuron" process group from torchrun's variables; emulate sets them as
    # `audit --run` does.
    pytest.importorskip("torch")
    project, env = _migrated_example(tmp_path)
    args = ["-m", "neuron_migrate", "emulate", "train.py", "--epochs", "1", "--num-samples", "512"]
    run = _run(args, cwd=project, env=env, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert "epoch 1 eval accuracy" in run.stdout + run.stderr and "Traceback" not in run.stderr


@pytest.mark.slow
def test_emulate_on_the_legacy_example_says_to_rewrite_it_first(tmp_path):
    pytest.importorskip("torch")
    project = _copy_example(tmp_path)
    run = _run(["-m", "neuron_migrate", "emulate", "train.py"], cwd=project, env=_env(ROOT), timeout=300)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-3000:]
    (line,) = [line for line in run.stderr.splitlines() if line.startswith("neuron-migrate emulate:")]
    assert line.startswith("neuron-migrate emulate: train.py:") and "imports torch_xla" in line
    assert "neuron-migrate rewrite train.py" in line


@pytest.mark.slow
def test_verify_finds_the_migrated_example_computing_what_the_legacy_one_computed(tmp_path):
    # The third step of a migration, as the README shows it: rewrite, review, verify. The legacy side runs
    # against the torch_xla double, the rewrite on the emulated device; float32 training agrees step by step.
    pytest.importorskip("torch")
    project, env = _migrated_example(tmp_path)

    run = _run(["-m", "neuron_migrate", "verify", str(EXAMPLE), str(project), "--steps", "5",
                "--legacy-env", f"PYTHONPATH={STUBS}", "--", "--output-dir", str(tmp_path / "ckpt")],
               cwd=tmp_path, env=env)

    assert run.returncode == 0, run.stdout + run.stderr
    assert "verify: equal: 5 steps" in run.stdout
    assert not any(EXAMPLE.glob("checkpoints")), "the legacy example folder stays as shipped"


def test_emulate_knows_every_legacy_module_the_rules_know():
    from neuron_migrate.analyzers.emulator.__main__ import _legacy_module
    from neuron_migrate.rules import LEGACY_MODULES

    assert all(_legacy_module(name) for name in LEGACY_MODULES)
    assert all(_legacy_module(name) for name in ("torch_xla.core.xla_model", "optimum.neuron.trainers"))
    assert not any(_legacy_module(name) for name in ("torch_xlab", "optimum", "torch_neuronx", "transformers"))
