"""``neuron-migrate verify`` end to end: a legacy program runs against the project's torch_xla double, its
rewrite (made by the command line in the test) on the emulated neuron device, and the two are compared."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import jsonschema
import pytest

from conftest import ROOT, program_env, run_cli

pytest.importorskip("torch")
STUBS = ROOT / "tests" / "stubs"
PROGRAMS = ROOT / "tests" / "legacy_programs"
SITE = ROOT / "neuron_migrate" / "verify" / "site"
LOOP_PARAMETERS = ("0.weight", "0.bias", "3.weight", "3.bias")  # sharded_loop.py's model


def _rewritten(root, *names):
    """The legacy programs ``names`` in ``root/legacy/`` and their rewrite by the command line in
    ``root/migrated/``."""
    legacy, migrated = root / "legacy", root / "migrated"
    legacy.mkdir()
    for name in names:
        shutil.copy(PROGRAMS / name, legacy / name)
    shutil.copytree(legacy, migrated)
    rewrite = run_cli("rewrite", "--quiet", migrated, cwd=root)
    assert rewrite.returncode == 1, rewrite.stdout + rewrite.stderr
    return root


@pytest.fixture(scope="module")
def _rewritten_once(tmp_path_factory):
    return _rewritten(tmp_path_factory.mktemp("verify"), "sharded_loop.py", "inference.py")


@pytest.fixture
def project(_rewritten_once, tmp_path):
    """A copy of the rewritten programs for one test, which may edit it (one rewrite serves them all)."""
    for name in ("legacy", "migrated"):
        shutil.copytree(_rewritten_once / name, tmp_path / name)
    return tmp_path


def _verify(root, name, *options):
    return run_cli("verify", f"legacy/{name}", f"migrated/{name}", "--legacy-env", f"PYTHONPATH={STUBS}", *options,
                cwd=root)


def _line_of(path, text):
    return next(n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if text in line)


def _edit(path, old, new):
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} is not in the rewrite any more"
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.mark.slow  # runs both sides' programs in processes of their own
def test_the_rewritten_loop_computes_what_the_legacy_loop_computed(project):
    run = _verify(project, "sharded_loop.py", "--steps", "4", "--report", "out.json", "--report", "out.html",
                  "--report", "out.md")

    assert run.returncode == 0, run.stdout + run.stderr
    assert "verify: equal: 4 steps" in run.stdout
    assert "migrated: migrated/sharded_loop.py on neuron (emulated on CPU)" in run.stdout
    data = json.loads((project / "out.json").read_text(encoding="utf-8"))
    schema = json.loads((ROOT / "neuron_migrate" / "report" / "verification.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(data, schema)
    assert data["outcome"] == "equal" and len(data["rows"]) == 4
    assert data["legacy"]["stopped"] and data["migrated"]["stopped"]
    assert data["compared"]["parameter"] == 4 and data["compared"]["batch"] == 4
    assert all(row["legacy_loss"] == row["migrated_loss"] for row in data["rows"])
    assert (project / "out.html").read_text(encoding="utf-8").count("<polyline") == 2
    assert (project / "out.md").read_text(encoding="utf-8").startswith("## neuron-migrate verify: equal\n")


@pytest.mark.slow  # runs both sides' programs in processes of their own
def test_a_changed_learning_rate_is_found_at_the_first_update(project):
    _edit(project / "migrated" / "sharded_loop.py", "lr=args.lr,", "lr=args.lr * 2,")

    run = _verify(project, "sharded_loop.py", "--steps", "3", "--format", "json")

    assert run.returncode == 1, run.stdout + run.stderr
    divergence = json.loads(run.stdout)["divergence"]
    assert (divergence["step"], divergence["what"]) == (0, "parameter")
    assert divergence["tensor"] in LOOP_PARAMETERS, "the parameter that differs most is named"
    assert divergence["cause"] == "the learning rate differs: 0.05 on the legacy side, 0.1 on the migrated one"
    step_line = _line_of(project / "migrated" / "sharded_loop.py", "optimizer.step()")
    assert divergence["at"] == f"{project / 'migrated' / 'sharded_loop.py'}:{step_line}", "the optimizer.step() call"


@pytest.mark.slow
def test_gradients_no_longer_averaged_over_two_ranks_are_found_with_the_edit_that_did_it(project):
    migrated = project / "migrated" / "sharded_loop.py"
    _edit(migrated, "        _average_gradients(optimizer)\n", "")
    marker = _line_of(migrated, "neuron-migrate(NM113)")

    run = _verify(project, "sharded_loop.py", "--steps", "3", "--nproc", "2")

    assert run.returncode == 1, run.stdout + run.stderr
    assert "first divergence: step 0, gradient " in run.stdout
    assert "the gradients are not averaged over the ranks as xm.optimizer_step did" in run.stdout
    assert f"migrated/sharded_loop.py:{marker}: NM113 gradients averaged by hand" in run.stdout


@pytest.mark.slow
def test_migrated_ranks_that_part_are_found_when_the_legacy_ranks_ran_alone(project):
    # As torch_xla on the CPU does: each legacy rank steps on its own gradients. Compared rank with rank the
    # two sides agree; only the migrated ranks against each other show the averaging that was dropped.
    _edit(project / "legacy" / "sharded_loop.py", "xm.optimizer_step(optimizer)", "optimizer.step()")
    migrated = project / "migrated" / "sharded_loop.py"
    _edit(migrated, "        _average_gradients(optimizer)\n", "")

    run = _verify(project, "sharded_loop.py", "--steps", "3", "--nproc", "2", "--format", "json")

    assert run.returncode == 1, run.stdout + run.stderr
    result = json.loads(run.stdout)
    divergence = result["divergence"]
    assert (divergence["what"], divergence["step"]) == ("ranks", 0)
    assert divergence["legacy"].startswith("rank 0: ") and divergence["migrated"].startswith("rank 1: ")
    assert "the migrated ranks do not average their gradients" in divergence["cause"]
    assert "DistributedDataParallel" in divergence["fix"]
    assert any("the legacy ranks part from each other as well" in note for note in result["notes"])


@pytest.mark.slow
def test_migrated_ranks_that_average_their_gradients_agree_with_each_other(project):
    run = _verify(project, "sharded_loop.py", "--steps", "3", "--nproc", "2", "--format", "json")

    assert run.returncode == 0, run.stdout
    notes = json.loads(run.stdout)["notes"]
    assert any("the 2 migrated ranks were compared with each other: they agree" in note for note in notes)


@pytest.mark.slow
def test_a_migrated_program_whose_device_helper_fell_back_to_the_cpu_is_not_vouched_for(tmp_path):
    _rewritten(tmp_path, "device_helper_loop.py")
    migrated = tmp_path / "migrated" / "device_helper_loop.py"
    honest = _verify(tmp_path, "device_helper_loop.py", "--steps", "3", "--format", "json")
    # the emulator provides the neuron device; this program cannot import torch_neuronx, as where it is missing
    _edit(migrated, '"""A legacy', 'import sys\nsys.modules["torch_neuronx"] = None\n"""A legacy')
    fallback = _line_of(migrated, 'return torch.device("cpu")')

    on_cpu = _verify(tmp_path, "device_helper_loop.py", "--steps", "3", "--format", "json")

    assert honest.returncode == 0, honest.stdout + honest.stderr
    assert json.loads(honest.stdout)["migrated"]["device"] == "neuron (emulated on CPU)"
    assert on_cpu.returncode == 1, on_cpu.stdout + on_cpu.stderr
    result = json.loads(on_cpu.stdout)
    assert all(row["equal"] for row in result["rows"]), "every value agrees: the CPU computes what the legacy did"
    divergence = result["divergence"]
    assert (divergence["what"], divergence["migrated"]) == ("device", "cpu")
    assert divergence["cause"].startswith("the migrated program ran on the CPU: none of its ")
    assert divergence["cause"].endswith('the except handler that chose it: return torch.device("cpu")')
    assert divergence["at"] == f"{migrated}:{fallback}"
    assert result["migrated"]["device"] == "cpu, not neuron (emulated on CPU)"


@pytest.mark.slow
def test_a_step_compiled_with_torch_xla_compile_is_recorded_after_it_ran(tmp_path):
    # the recorder reads nothing inside the traced step (full_graph forbids it): the step's loss, gradients and
    # parameters are written once it has run, and the forward pass under torch_xla.step() is a model output
    _rewritten(tmp_path, "compiled_step_loop.py")

    same = _verify(tmp_path, "compiled_step_loop.py", "--steps", "4", "--format", "json", "--keep-records", "rec")
    _edit(tmp_path / "migrated" / "compiled_step_loop.py", "lr=0.05", "lr=0.06")
    changed = _verify(tmp_path, "compiled_step_loop.py", "--steps", "4", "--format", "json")

    assert same.returncode == 0, same.stdout + same.stderr
    result = json.loads(same.stdout)
    assert result["compared"]["parameter"] == 4 and result["compared"]["gradient"] == 4
    assert result["compared"]["output"] == 3, "the forward pass under torch_xla.step(), after each step but the last"
    assert result["notes"] == []
    assert changed.returncode == 1
    assert json.loads(changed.stdout)["divergence"]["cause"].startswith("the learning rate differs: 0.05")


@pytest.mark.slow  # runs both sides' programs in processes of their own
def test_an_inference_script_compares_its_model_outputs(project):
    run = _verify(project, "inference.py")

    assert run.returncode == 0, run.stdout + run.stderr
    assert "verify: equal: 2 model outputs compared" in run.stdout
    assert "    0  Sequential" in run.stdout, "a table of the model calls"


@pytest.mark.slow
def test_a_transformers_model_fine_tuned_on_the_double_and_the_emulator_agrees(tmp_path):
    _rewritten(tmp_path, "causal_lm_loop.py")

    run = _verify(tmp_path, "causal_lm_loop.py", "--steps", "4", "--keep-records", "records")

    assert run.returncode == 0, run.stdout + run.stderr
    assert "verify: equal: 4 steps" in run.stdout
    (record,) = (tmp_path / "records" / "migrated").glob("rank0-*.jsonl")
    events = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    names = [tensor["name"] for tensor in events[-2]["tensors"]]
    assert names[0] == "model.embed_tokens.weight" and "model.norm.weight" in names, "named as in the model"
    assert events[-1]["kind"] == "stop"


@pytest.mark.slow
def test_generated_tokens_are_compared_id_by_id(tmp_path):
    migrated = _rewritten(tmp_path, "generate_tokens.py") / "migrated"

    same = _verify(tmp_path, "generate_tokens.py", "--format", "json")
    _edit(migrated / "generate_tokens.py", "[[1, 17, 42, 7, 99]]", "[[1, 17, 42, 7, 98]]")
    changed = _verify(tmp_path, "generate_tokens.py", "--format", "json")

    assert same.returncode == 0, same.stdout + same.stderr
    outputs = json.loads(same.stdout)["outputs"]
    assert [row["what"] for row in outputs] == ["generate"], "the model calls inside generate are not listed"
    assert changed.returncode == 1
    divergence = json.loads(changed.stdout)["divergence"]
    assert (divergence["what"], divergence["step"]) == ("output", 0)


@pytest.mark.slow
def test_one_legacy_rank_with_the_global_batch_against_two_migrated_ranks(tmp_path):
    # The example shards with a DistributedSampler: two ranks of 32 see, step by step, the 64 samples one rank
    # of 64 sees. Its learning rate is scaled by the world size, so the one legacy rank gets the doubled rate.
    example = ROOT / "examples" / "xla-training"
    migrated = tmp_path / "migrated"
    shutil.copytree(example, migrated)
    assert run_cli("rewrite", "--quiet", migrated, cwd=tmp_path).returncode == 1
    common = ["verify", example, migrated, "--legacy-env", f"PYTHONPATH={STUBS}", "--steps", "3", "--nproc", "2",
              "--legacy-nproc", "1"]

    run = run_cli(*common, "--legacy-args", "--batch-size 64 --lr 2e-3", "--", "--output-dir", tmp_path / "ckpt",
               cwd=tmp_path)
    half = run_cli(*common, "--", "--output-dir", tmp_path / "ckpt", cwd=tmp_path)

    assert run.returncode == 0, run.stdout + run.stderr
    assert "the legacy side ran 1 rank and the migrated side 2: compared what the global batch decides" in run.stdout
    assert half.returncode == 1, "one legacy rank with the per-rank batch sees half the global batch"


@pytest.mark.slow
def test_an_inference_script_with_another_activation_parts_at_its_first_output(project):
    _edit(project / "migrated" / "inference.py", "nn.GELU()", "nn.ReLU()")

    changed = _verify(project, "inference.py")

    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert "first divergence: step 0, output tensor 0" in changed.stdout
    assert "the forward pass computes something else" in changed.stdout


@pytest.mark.slow  # runs both sides' programs in processes of their own
def test_a_side_that_fails_is_reported_with_its_error_and_exit_2(project):
    _edit(project / "migrated" / "sharded_loop.py", "        optimizer.zero_grad()\n",
          "        if step == 2:\n            raise RuntimeError('out of memory at step 2')\n"
          "        optimizer.zero_grad()\n")

    run = _verify(project, "sharded_loop.py", "--steps", "4")

    assert run.returncode == 2, run.stdout + run.stderr
    assert "the migrated side failed: RuntimeError: out of memory at step 2" in run.stdout
    assert "    RuntimeError: out of memory at step 2" in run.stdout, "its last output lines are shown"
    assert "verify: could not compare: the migrated side did not run to the end" in run.stdout
    assert "the legacy side failed" not in run.stdout
    rows = [line.split() for line in run.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [(row[0], row[-1]) for row in rows] == [("0", "equal"), ("1", "equal")], "the steps before the failure"


@pytest.mark.slow
def test_a_legacy_interpreter_without_torch_xla_is_named(project):
    run = run_cli("verify", "legacy/inference.py", "migrated/inference.py", cwd=project)

    assert run.returncode == 2
    assert f"the legacy side failed: {sys.executable} has no module 'torch_xla'" in run.stdout
    assert "--legacy-python" in run.stdout


@pytest.mark.slow
def test_a_program_that_reaches_for_the_network_is_told_to_use_local_data(tmp_path):
    script = tmp_path / "download.py"
    script.write_text("import urllib.request\nurllib.request.urlopen('https://huggingface.co/api/models')\n",
                      encoding="utf-8")

    run = run_cli("verify", script, script, cwd=tmp_path)

    assert run.returncode == 2
    assert "the legacy side failed: needs the network (it tried huggingface.co:443)" in run.stdout
    assert "local copy" in run.stdout


def test_a_folder_needs_one_entry_script_or_script(tmp_path):
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("if __name__ == '__main__':\n    pass\n", encoding="utf-8")

    run = run_cli("verify", tmp_path, tmp_path, cwd=tmp_path)

    assert run.returncode == 2
    assert "name the entry script with --script (scripts with a __main__ guard: a.py, b.py)" in run.stderr


@pytest.mark.slow  # starts a Python process with torch under the recorder
def test_the_recorder_runs_the_sitecustomize_it_hides_and_fixes_the_seeds(tmp_path):
    import random

    import torch

    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import os\nos.environ['OTHER_SITE'] = 'ran'\n", encoding="utf-8")
    records = tmp_path / "records"
    records.mkdir()
    env = {**program_env(), "PYTHONPATH": os.pathsep.join([str(SITE), str(other)]),
           "NEURON_MIGRATE_VERIFY_RECORD": str(records), "NEURON_MIGRATE_VERIFY_SEED": "7"}
    code = "import os, random, torch; print(os.environ['OTHER_SITE'], random.random(), torch.rand(1).item())"

    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)

    assert run.returncode == 0, run.stderr
    random.seed(7)
    torch.manual_seed(7)
    assert run.stdout.split() == ["ran", str(random.random()), str(torch.rand(1).item())]
    (record,) = records.glob("rank0-*.jsonl")
    start = json.loads(record.read_text(encoding="utf-8").splitlines()[0])
    assert start["kind"] == "start" and start["torch_xla"] is False


@pytest.mark.slow
def test_a_batch_the_recorder_cannot_read_leaves_the_program_running(tmp_path):
    script = tmp_path / "shapes_only.py"
    script.write_text(
        "import torch\n"
        "from torch.utils.data import DataLoader\n\n"
        "class Shapes(torch.utils.data.Dataset):  # meta tensors: shapes without values\n"
        "    def __len__(self):\n        return 4\n"
        "    def __getitem__(self, i):\n        return torch.empty(2, device='meta')\n\n"
        "import importlib.util\n"
        "device = 'neuron' if importlib.util.find_spec('torch_neuronx') else 'cpu'  # the emulator's on one side\n"
        "model = torch.nn.Linear(2, 1).to(device)\n"
        "for batch in DataLoader(Shapes(), batch_size=2, collate_fn=lambda items: items[0]):\n"
        "    print(model(torch.ones(batch.shape, device=device)).sum().item())\n", encoding="utf-8")

    run = run_cli("verify", script, script, cwd=tmp_path)

    assert run.returncode == 0, run.stdout + run.stderr
    assert "verify: equal: 2 model outputs compared" in run.stdout
    assert "note: the legacy side's recorder could not read its batches: " in run.stdout


@pytest.mark.slow
def test_a_dead_weak_proxy_in_the_program_does_not_hide_its_parameters(tmp_path):
    # gc.get_objects() returns the program's weak proxies; asking one whose module died what it is raises
    script = tmp_path / "proxies.py"
    script.write_text(
        "import gc, weakref\n"
        "import torch\n\n"
        "import importlib.util\n"
        "device = 'neuron' if importlib.util.find_spec('torch_neuronx') else 'cpu'  # the emulator's on one side\n"
        "gc.disable()  # the dead proxy stays in gc's lists until the recorder scans them\n"
        "proxies = [weakref.proxy(torch.nn.Linear(2, 2))]  # its module is freed at once\n"
        "model = torch.nn.Linear(2, 1).to(device)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for step in range(2):\n"
        "    loss = model(torch.ones(1, 2, device=device)).sum()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    opt.zero_grad()\n", encoding="utf-8")

    run = run_cli("verify", script, script, "--steps", "2", "--format", "json", cwd=tmp_path)

    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(run.stdout)
    assert result["notes"] == []
    assert result["compared"]["parameter"] == 2 and result["compared"]["gradient"] == 2


def _commit_all(repo):
    git = ["git", "-C", str(repo), "-c", "user.email=dev@example.com", "-c", "user.name=dev"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "legacy"], check=True)


@pytest.mark.slow
def test_a_project_migrated_in_place_is_verified_against_its_last_commit(tmp_path):
    shutil.copy(PROGRAMS / "sharded_loop.py", tmp_path)
    _commit_all(tmp_path)
    assert run_cli("rewrite", "--quiet", "sharded_loop.py", "--report", "migration.html", cwd=tmp_path).returncode == 1
    _edit(tmp_path / "sharded_loop.py", "lr=args.lr,", "lr=args.lr * 2,")

    run = run_cli("verify", "git:HEAD", "sharded_loop.py", "--legacy-env", f"PYTHONPATH={STUBS}", "--steps", "2",
               "--report", "migration.html", cwd=tmp_path)

    assert run.returncode == 1, run.stdout + run.stderr
    assert "  legacy: git:HEAD:sharded_loop.py on cpu" in run.stdout
    assert "the learning rate differs: 0.05 on the legacy side, 0.1 on the migrated one" in run.stdout
    page = (tmp_path / "migration.html").read_text(encoding="utf-8")
    assert "<h1>neuron-migrate report</h1>" in page and page.count('<section id="verification">') == 1
    assert "M sharded_loop.py" in subprocess.run(["git", "-C", str(tmp_path), "status", "--short"],
                                                 capture_output=True, text=True).stdout, "the working tree is kept"


def test_a_revision_git_does_not_know_is_a_usage_error(tmp_path):
    (tmp_path / "train.py").write_text("print('hi')\n", encoding="utf-8")
    _commit_all(tmp_path)

    run = run_cli("verify", "git:no-such-branch", "train.py", cwd=tmp_path)

    assert run.returncode == 2
    assert "not a valid object name: no-such-branch" in run.stderr


@pytest.mark.slow
@pytest.mark.parametrize("example, script", [("optimum-inference", "generate.py"), ("optimum-sft", "train.py")])
def test_an_optimum_example_says_what_its_legacy_side_lacks_here(tmp_path, example, script):
    # optimum-neuron runs only on Neuron hardware with its own stack, and the examples load a model from the hub:
    # here the legacy side lacks optimum and the migrated one the network. Whichever fails first stops the
    # other, and verify says why instead of comparing anything.
    source = ROOT / "examples" / example
    migrated = tmp_path / example
    shutil.copytree(source, migrated)
    assert run_cli("rewrite", "--quiet", migrated, cwd=tmp_path).returncode == 1

    run = run_cli("verify", source, migrated, "--script", script, cwd=tmp_path)

    assert run.returncode == 2, run.stdout + run.stderr
    lacks_optimum = f"the legacy side failed: {sys.executable} has no module 'optimum"  # or 'optimum.neuron'"
    needs_network = "the migrated side failed: needs the network (it tried huggingface.co)"
    assert lacks_optimum in run.stdout or needs_network in run.stdout, run.stdout
