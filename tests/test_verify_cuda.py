"""``verify`` against a CUDA original: which kind an original is, the causes a GPU program's numerics explain
(from records written as the recorder writes them), and end to end (slow) small CUDA programs of the common
shape rewritten by ``rewrite --from cuda`` and run here on the CPU through their own fallback."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import ROOT, run_cli
from neuron_migrate.verify import causes, original
from neuron_migrate.verify.compare import compare
from neuron_migrate.verify.records import Record

PROGRAMS = ROOT / "tests" / "cuda_programs"


# which kind an original is

@pytest.mark.parametrize("source, kind", [
    ("import torch_xla.core.xla_model as xm\nx = torch.zeros(1).cuda()\n", "legacy"),  # torch_xla decides
    ("from optimum.neuron import NeuronTrainer\n", "legacy"),
    ("device = 'cuda' if torch.cuda.is_available() else 'cpu'\n", "cuda"),
    ("model = model.cuda()\n", "cuda"),
    ("dist.init_process_group('nccl')\n", "cuda"),
    ("import torch\nmodel = torch.nn.Linear(2, 2)\n", "legacy"),
])
def test_the_original_kind_is_read_from_its_source(tmp_path, source, kind):
    script = tmp_path / "train.py"
    script.write_text(source)
    assert original.kind_of(script, script, None) == kind


def test_the_flag_and_the_project_setting_decide_the_kind(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import torch\n")
    assert original.kind_of(script, script, "cuda") == "cuda"
    (tmp_path / "pyproject.toml").write_text('[tool.neuron-migrate]\nfrom = "cuda"\n')
    assert original.kind_of(tmp_path, script, None) == "cuda"


def test_a_module_of_the_project_makes_it_legacy(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("from helpers import device\nmodel = model.cuda()\n")
    (tmp_path / "helpers.py").write_text("import torch_xla\n")
    assert original.kind_of(tmp_path, script, None) == "legacy"


# the causes of a CUDA pair, from records

def _events(loss, *, device="cuda", settings=None, autocast="", dtype="float32", skipped=()):
    """One step of a recorded program: an output, its loss, the gradient and the parameter after the step."""
    def tensor(norm):
        return {"shape": [4], "dtype": dtype, "device": device, "norm": norm, "values": [norm / 2] * 4,
                "name": "weight"}

    events = [{"kind": "start", "step": 0, "cuda": device == "cuda"}]
    if settings is not None:
        events.append({"kind": "settings", "step": 0, "device": device, **settings})
    events += [{"kind": "params", "when": "before", "step": 0, "tensors": [tensor(1.0)]},
               {"kind": "skipped", "step": 0, "scale": 65536.0} if 0 in skipped else None,
               {"kind": "output", "step": 0, "tensors": [tensor(loss)], "autocast": bool(autocast),
                "autocast_dtype": autocast},
               {"kind": "loss", "step": 0, "value": loss, "device": device, "autocast": False},
               {"kind": "grads", "step": 0, "tensors": [tensor(0.5)], "lr": [0.1]},
               {"kind": "params", "when": "after", "step": 0, "tensors": [tensor(1.0)]}]
    return Record(0, [event for event in events if event is not None])


def _cause(legacy, migrated):
    first = compare(legacy, migrated, 1e-5).first
    assert first is not None
    return causes.explain(first, legacy, migrated, {}, [], original="cuda").cause


TF32_ON = {"tf32_matmul": True, "tf32_cudnn": True, "matmul_precision": "highest", "cudnn_benchmark": False,
           "gpu": "NVIDIA H200"}
TF32_OFF = {**TF32_ON, "tf32_matmul": False}


def test_tf32_on_the_gpu_is_named_for_a_difference_of_its_size():
    cause = _cause(_events(2.0, settings=TF32_ON), _events(2.002, device="neuron"))
    assert "TF32" in cause and "allow_tf32 = True" in cause


def test_a_difference_larger_than_tf32_makes_is_not_excused_by_it():
    cause = _cause(_events(2.0, settings=TF32_ON), _events(2.4, device="neuron"))
    assert "TF32" not in cause and "forward pass" in cause


def test_cudnn_benchmark_is_named_for_a_rounding_drift():
    cause = _cause(_events(2.0, settings={**TF32_OFF, "cudnn_benchmark": True}), _events(2.0002, device="neuron"))
    assert "cudnn.benchmark = True" in cause


def test_a_gpu_run_without_those_switches_is_named_as_another_summation_order():
    cause = _cause(_events(2.0, settings=TF32_OFF), _events(2.0002, device="neuron"))
    assert "ran on a GPU (NVIDIA H200)" in cause


def test_float16_against_bfloat16_autocast_is_expected_below_its_rounding_and_not_above():
    legacy = _events(2.0, settings=TF32_OFF, autocast="float16", dtype="float16")
    assert "expected, not a migration bug" in _cause(legacy, _events(2.01, device="neuron", autocast="bfloat16",
                                                                      dtype="bfloat16"))
    large = _cause(legacy, _events(3.0, device="neuron", autocast="bfloat16", dtype="bfloat16"))
    assert "larger than their rounding explains" in large


def test_a_skipped_scaler_step_is_named():
    cause = _cause(_events(2.0, settings=TF32_OFF, skipped=(0,)), _events(2.5, device="neuron"))
    assert cause.startswith("the original's GradScaler skipped the optimizer step of step 0")


def test_an_original_that_ran_on_the_cpu_gets_no_gpu_cause():
    cause = _cause(_events(2.0, device="cpu", settings=TF32_OFF), _events(2.0002, device="neuron"))
    assert "GPU" not in cause and "TF32" not in cause


def test_a_cuda_autocast_that_did_nothing_on_the_cpu_is_named():
    cause = _cause(_events(2.0, device="cpu", settings=TF32_OFF),
                   _events(2.01, device="neuron", autocast="bfloat16"))
    assert "does nothing without a GPU" in cause


# end to end: the programs run (slow)

@pytest.fixture(scope="module")
def _rewritten_once(tmp_path_factory):
    root = tmp_path_factory.mktemp("cuda")
    shutil.copytree(PROGRAMS, root / "original")
    shutil.copytree(PROGRAMS, root / "migrated")
    rewrite = run_cli("rewrite", "--from", "cuda", "--quiet", root / "migrated", cwd=root)
    assert rewrite.returncode == 1, rewrite.stdout + rewrite.stderr
    return root


@pytest.fixture
def project(_rewritten_once, tmp_path):
    for name in ("original", "migrated"):
        shutil.copytree(_rewritten_once / name, tmp_path / name)
    return tmp_path


def _verify(root, name, *options):
    return run_cli("verify", f"original/{name}", f"migrated/{name}", *options, cwd=root)


def _edit(path, old, new):
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} is not in the rewrite any more"
    path.write_text(text.replace(old, new), encoding="utf-8")


def _no_gpu():
    import torch

    return not torch.cuda.is_available()


@pytest.mark.slow  # runs both sides' programs
def test_a_cuda_loop_with_a_cpu_fallback_computes_what_its_rewrite_computes(project):
    run = _verify(project, "mlp_loop.py", "--steps", "3", "--format", "json")

    assert run.returncode == 0, run.stdout + run.stderr
    data = json.loads(run.stdout)
    assert data["outcome"] == "equal" and len(data["rows"]) == 3
    assert data["legacy"]["kind"] == "cuda" and data["migrated"]["kind"] == "neuron"
    if _no_gpu():
        assert data["legacy"]["device"] == "cpu (no GPU here: the program's own fallback)"
    assert data["migrated"]["device"] == "neuron (emulated on CPU)"


@pytest.mark.slow
def test_the_loss_scaled_by_a_grad_scaler_is_compared_before_scaling(project):
    run = _verify(project, "mlp_loop.py", "--steps", "2", "--format", "json", "--", "--amp")

    assert run.returncode == 0, run.stdout + run.stderr
    losses = [row["legacy_loss"] for row in json.loads(run.stdout)["rows"]]
    assert all(0.5 < loss < 2.0 for loss in losses), "the loss before the scaler's 65536"


@pytest.mark.slow
@pytest.mark.skipif(not _no_gpu(), reason="a GPU here runs the hard-coded program")
def test_a_program_hard_coded_to_cuda_says_it_needs_a_gpu_and_how_to_compare_from_one(project):
    run = _verify(project, "hard_coded.py", "--steps", "2", "--", "--epochs", "1")

    assert run.returncode == 2, run.stdout + run.stderr
    assert "the legacy side failed: needs a GPU" in run.stdout
    there = ("neuron-migrate verify original/hard_coded.py migrated/hard_coded.py --original cuda --steps 2 "
             "--keep-records verify-records -- --epochs 1")
    here = ("neuron-migrate verify original/hard_coded.py migrated/hard_coded.py --original cuda --steps 2 "
            "--original-records verify-records/legacy -- --epochs 1")
    assert f"note: record the original on a machine with a GPU: {there}" in run.stdout
    assert f"note: then compare its records here: {here}" in run.stdout
    assert run.stdout.rstrip().endswith("the CUDA original needs a GPU and none is here (see the commands above)")


@pytest.mark.slow
def test_kept_records_of_the_original_are_compared_without_running_it(project):
    kept = _verify(project, "mlp_loop.py", "--steps", "2", "--keep-records", "kept")
    assert kept.returncode == 0, kept.stdout + kept.stderr
    (project / "original" / "mlp_loop.py").write_text("raise SystemExit('not run')\n")  # it must not run again

    run = _verify(project, "mlp_loop.py", "--steps", "2", "--original-records", "kept", "--format", "json")

    assert run.returncode == 0, run.stdout + run.stderr
    data = json.loads(run.stdout)
    assert data["outcome"] == "equal" and len(data["rows"]) == 2
    assert data["legacy"]["command"][-1].endswith("mlp_loop.py"), "the command the records were made with"


@pytest.mark.slow
def test_a_planted_wrong_edit_in_the_rewrite_is_different_with_its_cause(project):
    _edit(project / "migrated" / "mlp_loop.py", "momentum=0.9", "momentum=0.0")

    run = _verify(project, "mlp_loop.py", "--steps", "3", "--format", "json")

    assert run.returncode == 1, run.stdout + run.stderr
    divergence = json.loads(run.stdout)["divergence"]
    assert (divergence["step"], divergence["what"]) == (1, "parameter")
    assert divergence["cause"].startswith("the gradients agree but the parameters after optimizer.step() differ")


@pytest.mark.slow
def test_float16_autocast_against_the_bfloat16_of_the_rewrite_names_the_dtypes(project):
    # what NM610 makes of a "cuda" float16 autocast, here where the autocast's device is a variable
    _edit(project / "migrated" / "mlp_loop.py", "dtype=torch.float16", "dtype=torch.bfloat16")

    run = _verify(project, "mlp_loop.py", "--steps", "2", "--format", "json", "--", "--amp")

    assert run.returncode == 1, run.stdout + run.stderr
    divergence = json.loads(run.stdout)["divergence"]
    assert (divergence["step"], divergence["what"]) == (0, "output")
    assert divergence["cause"].startswith("the original autocasts to float16 and the migrated program to bfloat16")
    assert "expected, not a migration bug" in divergence["cause"]


@pytest.mark.slow
def test_a_step_the_original_scaler_skipped_is_named(project):
    run = _verify(project, "mlp_loop.py", "--steps", "2", "--format", "json", "--legacy-args",
                  "--init-scale 3e38", "--", "--amp")

    assert run.returncode == 1, run.stdout + run.stderr
    divergence = json.loads(run.stdout)["divergence"]
    assert divergence["cause"].startswith("the original's GradScaler skipped the optimizer step of step 0")
    assert any(edit["rule"] == "NM611" for edit in divergence["edits"]), "the scaler's marker is listed"


@pytest.mark.slow
@pytest.mark.skipif(not _no_gpu(), reason="a GPU here runs the distributed branch")
def test_a_script_that_goes_distributed_under_a_launcher_runs_its_one_device_path_without_one(project):
    launched = _verify(project, "rank_switch.py", "--steps", "2", "--legacy-args", "--device cpu")
    assert launched.returncode == 2, launched.stdout + launched.stderr  # RANK set: its nccl branch needs a GPU

    run = _verify(project, "rank_switch.py", "--steps", "2", "--no-launcher", "--legacy-args", "--device cpu",
                  "--format", "json")

    assert run.returncode == 0, run.stdout + run.stderr
    data = json.loads(run.stdout)
    assert data["outcome"] == "equal" and len(data["rows"]) == 2
    assert data["legacy"]["device"] == "cpu (no GPU here: as --legacy-args asked)"
    assert data["migrated"]["device"] == "neuron (emulated on CPU)"


@pytest.mark.slow
def test_the_side_that_computed_nothing_is_the_one_that_failed(project):
    _edit(project / "migrated" / "mlp_loop.py", "import argparse\n", "import argparse\nraise SystemExit(0)\n")

    run = _verify(project, "mlp_loop.py", "--steps", "2", "--format", "json")

    assert run.returncode == 2, run.stdout + run.stderr
    data = json.loads(run.stdout)
    assert data["migrated"]["error"].startswith("nothing to compare")
    assert not data["legacy"]["error"]
