"""``verify`` against the real torch-xla 2.9 on the CPU (optional: it needs a venv of its own).

Build the venv once (a CUDA build of torch, about 7 GB) and name its interpreter:

    python3 -m venv ~/venvs/torch-xla
    ~/venvs/torch-xla/bin/pip install torch==2.9.0 torch-xla==2.9.0 numpy \
        "transformers==$(python -c 'import transformers; print(transformers.__version__)')" \
        "accelerate==$(python -c 'import accelerate; print(accelerate.__version__)')"
    NEURON_MIGRATE_TORCH_XLA_PYTHON=~/venvs/torch-xla/bin/python python -m pytest -m slow tests/test_verify_torch_xla.py

Without the variable every test here is skipped. The legacy side then runs on XLA's CPU device
(``PJRT_DEVICE=CPU``), the migrated side on the emulator: float32 programs agree within the default rtol.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, run_cli
from test_verify import _edit

pytest.importorskip("torch")
LEGACY_PYTHON = os.environ.get("NEURON_MIGRATE_TORCH_XLA_PYTHON", "")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not LEGACY_PYTHON, reason="NEURON_MIGRATE_TORCH_XLA_PYTHON names no torch-xla interpreter"),
]
PROGRAMS = ROOT / "tests" / "legacy_programs"


@pytest.fixture
def project(tmp_path):
    """The example project and the legacy programs in ``legacy/``, their rewrite in ``migrated/``."""
    legacy = tmp_path / "legacy"
    shutil.copytree(ROOT / "examples" / "xla-training", legacy)
    for name in ("sharded_loop.py", "inference.py", "causal_lm_loop.py", "generate_tokens.py", "trainer_loop.py",
                 "conv_batchnorm_loop.py", "adam_mlp_loop.py", "device_helper_loop.py", "compiled_step_loop.py"):
        shutil.copy(PROGRAMS / name, legacy / name)
    shutil.copytree(legacy, tmp_path / "migrated")
    assert run_cli("rewrite", "--quiet", tmp_path / "migrated", cwd=tmp_path).returncode == 1
    return tmp_path


def _verify(root: Path, name: str, *options: str):
    run = run_cli("verify", f"legacy/{name}", f"migrated/{name}", "--legacy-python", LEGACY_PYTHON,
               "--format", "json", *options, cwd=root)
    assert run.stdout, run.stderr
    return run.returncode, json.loads(run.stdout)


def test_the_example_trains_the_same_on_torch_xla_and_the_emulator(project):
    code, result = _verify(project, "train.py", "--", "--output-dir", "ckpt")

    assert code == 0, result
    assert result["legacy"]["device"] == "xla (PJRT_DEVICE=CPU)"
    assert len(result["rows"]) == 10


def test_a_loop_with_sgd_and_momentum_agrees_and_a_changed_rate_does_not(project):
    code, result = _verify(project, "sharded_loop.py")
    assert code == 0, result

    _edit(project / "migrated" / "sharded_loop.py", "lr=args.lr,", "lr=args.lr * 2,")
    code, result = _verify(project, "sharded_loop.py", "--steps", "3")

    assert code == 1
    assert result["divergence"]["cause"].startswith("the learning rate differs: 0.05 on the legacy side")


def test_dropout_masks_differ_and_no_dropout_compares_the_rest(project):
    code, result = _verify(project, "sharded_loop.py", "--steps", "3", "--", "--dropout", "0.1")

    assert code == 1
    assert "dropout in training mode" in result["divergence"]["cause"]

    code, result = _verify(project, "sharded_loop.py", "--steps", "3", "--no-dropout", "--", "--dropout", "0.1")
    assert code == 0, result


def test_bf16_autocast_differs_by_its_policy_and_is_called_expected(project):
    code, result = _verify(project, "train.py", "--steps", "3", "--", "--output-dir", "ckpt", "--bf16")

    assert code == 1
    divergence = result["divergence"]
    assert divergence["difference"] < 5e-2
    assert "autocast policies differ" in divergence["cause"]


def test_xla_use_bf16_is_named_as_the_cause(project):
    code, result = _verify(project, "train.py", "--steps", "3", "--legacy-env", "XLA_USE_BF16=1", "--",
                           "--output-dir", "ckpt")

    assert code == 1
    assert result["divergence"]["cause"].startswith("XLA_USE_BF16=1 ran the legacy side")
    assert result["divergence"]["edits"][0]["rule"] == "NM502"


def test_a_transformers_model_fine_tuned_with_clipping_agrees(project):
    code, result = _verify(project, "causal_lm_loop.py", "--steps", "5")

    assert code == 0, result
    assert result["compared"]["parameter"] == 5


def test_transformers_trainer_on_xla_and_on_the_neuron_device_agree(project):
    code, result = _verify(project, "trainer_loop.py", "--steps", "4")

    assert code == 0, result
    assert result["legacy"]["device"] == "xla (PJRT_DEVICE=CPU)" and len(result["rows"]) == 4


def test_a_convolution_with_batch_norm_agrees_despite_the_rounding_residue_of_its_biases(project):
    code, result = _verify(project, "conv_batchnorm_loop.py", "--steps", "10")

    assert code == 0, result
    assert max(row["parameter_difference"] for row in result["rows"]) < 1e-5


def test_generated_tokens_agree(project):
    code, result = _verify(project, "generate_tokens.py")

    assert code == 0, result
    assert [row["what"] for row in result["outputs"]] == ["generate"]


def test_an_inference_script_agrees(project):
    code, result = _verify(project, "inference.py")

    assert code == 0, result
    assert len(result["outputs"]) == 2


def test_a_failing_migrated_side_is_reported(project):
    _edit(project / "migrated" / "sharded_loop.py", "        optimizer.zero_grad()\n",
          "        if step == 1:\n            raise RuntimeError('broken')\n        optimizer.zero_grad()\n")

    code, result = _verify(project, "sharded_loop.py")

    assert code == 2
    assert result["migrated"]["error"] == "RuntimeError: broken"


def test_adam_agrees_although_it_scales_the_rounding_residue_of_a_bias_up_to_an_update(project):
    # XLA and the CPU leave different residue in the gradient of the bias the batch norm follows; Adam turns it
    # into updates of either sign. A doubled learning rate still parts at the first step.
    code, result = _verify(project, "adam_mlp_loop.py")

    assert code == 0, result
    assert "not compared after the steps: 0.bias, whose gradients were rounding residue" in " ".join(result["notes"])
    assert max(row["loss_difference"] for row in result["rows"]) < 1e-6

    _edit(project / "migrated" / "adam_mlp_loop.py", "lr=args.lr)", "lr=args.lr * 2)")
    code, result = _verify(project, "adam_mlp_loop.py", "--steps", "3")

    assert code == 1
    assert (result["divergence"]["step"], result["divergence"]["what"]) == (0, "parameter")
    assert result["divergence"]["cause"].startswith("the learning rate differs: 0.001 on the legacy side")


def test_a_device_helper_that_fell_back_to_the_cpu_is_not_vouched_for(project):
    code, result = _verify(project, "device_helper_loop.py", "--steps", "3")
    assert code == 0, result

    _edit(project / "migrated" / "device_helper_loop.py", '"""A legacy',
          'import sys\nsys.modules["torch_neuronx"] = None\n"""A legacy')
    code, result = _verify(project, "device_helper_loop.py", "--steps", "3")

    assert code == 1
    assert result["divergence"]["what"] == "device"
    assert result["divergence"]["cause"].endswith('the except handler that chose it: return torch.device("cpu")')


def test_a_step_compiled_whole_with_torch_xla_compile_runs_and_agrees(project):
    # full_graph=True forbids reading a value inside the step: the recorder writes its events after it ran
    code, result = _verify(project, "compiled_step_loop.py")

    assert code == 0, result
    assert result["compared"]["gradient"] == 10 and result["compared"]["output"] == 9
    assert not any("could not read" in note for note in result["notes"])
