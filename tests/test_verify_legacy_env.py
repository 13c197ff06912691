"""``python -m neuron_migrate.verify.legacy_env``: the legacy environment's recipe, and (optional lanes) the
environment it builds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from neuron_migrate.verify import legacy_env

LEGACY_PYTHON = os.environ.get("NEURON_MIGRATE_TORCH_XLA_PYTHON", "")
BUILD = os.environ.get("NEURON_MIGRATE_MAKE_LEGACY_ENV", "")  # a folder to build a fresh environment in


def test_torch_comes_first_from_the_index_given_then_torch_xla_at_the_same_release(tmp_path):
    torch, xla = legacy_env.commands(tmp_path / "env", "https://download.pytorch.org/whl/cpu", ("typer", "absent-x"))

    assert torch[0] == str(tmp_path / "env" / "bin" / "python")
    assert torch[-3:] == ["torch==2.9.0", "--index-url", "https://download.pytorch.org/whl/cpu"]
    assert xla[xla.index("torch-xla==2.9.0") + 1:] == ["numpy", f"typer=={_version('typer')}", "absent-x"]
    assert "--index-url" not in xla, "torch-xla and the rest come from the default index"


def test_without_an_index_torch_comes_from_the_default_one(tmp_path):
    torch, _ = legacy_env.commands(tmp_path)

    assert torch[-1] == "torch==2.9.0"


def _version(name):
    import importlib.metadata

    return importlib.metadata.version(name)


@pytest.mark.slow
@pytest.mark.skipif(not LEGACY_PYTHON, reason="NEURON_MIGRATE_TORCH_XLA_PYTHON names no torch-xla interpreter")
def test_the_legacy_interpreter_runs_a_tensor_on_the_xla_cpu_device():
    run = subprocess.run([LEGACY_PYTHON, "-c", legacy_env.CHECK], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PJRT_DEVICE": "CPU"})

    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split()[1:3] == ["2.9.0", "xla:0"] and run.stdout.startswith("2.9.0")


@pytest.mark.slow
@pytest.mark.skipif(not BUILD, reason="NEURON_MIGRATE_MAKE_LEGACY_ENV names no folder to build in (GBs, minutes)")
def test_the_recipe_builds_an_environment_verify_can_use():
    folder = Path(BUILD)
    run = subprocess.run([sys.executable, "-m", "neuron_migrate.verify.legacy_env", str(folder)],
                         capture_output=True, text=True, timeout=1800)

    assert run.returncode == 0, run.stderr[-3000:]
    assert f"--legacy-python {folder.absolute()}/bin/python" in run.stdout
