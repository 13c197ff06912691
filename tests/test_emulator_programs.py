"""Whole programs under ``neuron-migrate emulate``: transformers/TRL/PEFT, DDP over torchrun, the command line,
and the migrated example against the original legacy script."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
import types

import pytest

from conftest import ROOT, program_env

torch = pytest.importorskip("torch")
PROGRAMS = ROOT / "tests" / "emulator_programs"
STUBS = ROOT / "tests" / "stubs"
def _env(*paths):
    return program_env(*paths, HF_HUB_OFFLINE="1", CI="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1")


def _emulate(args, cwd, env=None, timeout=240):
    return subprocess.run(
        [sys.executable, "-m", "neuron_migrate", "emulate", *args], cwd=cwd, env=env or _env(), capture_output=True,
        text=True, timeout=timeout,
    )


def _close(a, b, tol=1e-6):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert math.isclose(x, y, rel_tol=tol, abs_tol=tol), (x, y)


@pytest.mark.slow
def test_transformers_trl_peft_take_the_neuron_paths_and_match_cpu(tmp_path):
    pytest.importorskip("trl")
    pytest.importorskip("peft")
    job = str(PROGRAMS / "hf_job.py")
    cpu = subprocess.run([sys.executable, job, "cpu", str(tmp_path / "cpu.json"), str(tmp_path)], env=_env(),
                         capture_output=True, text=True, timeout=240)
    assert cpu.returncode == 0, cpu.stderr[-3000:]
    neuron = _emulate([job, "neuron", str(tmp_path / "neuron.json"), str(tmp_path)], cwd=tmp_path)
    assert neuron.returncode == 0, neuron.stderr[-3000:]
    assert "neuron device emulated on CPU" in neuron.stderr
    c = json.loads((tmp_path / "cpu.json").read_text())
    n = json.loads((tmp_path / "neuron.json").read_text())

    assert n["param_device"] == "neuron:0"  # from_pretrained(device_map="neuron")
    _close(c["logits"], n["logits"])
    assert n["generated"] == c["generated"] and n["decoded"] == c["decoded"]  # static-cache generate
    for key in ("eager_losses", "compiled_losses", "sft_losses", "lora_losses", "reloaded_logits"):
        _close(c[key], n[key])
    assert n["saved_files"] == c["saved_files"] and "model.safetensors" in n["saved_files"]
    # Trainer/TRL took their neuron branches: device, compile backend, padding
    assert n["sft"]["device"] == "neuron:0" and n["sft"]["param_device"] == "neuron:0"
    assert n["sft"]["backend"] == "neuron" and n["sft"]["pad_to_multiple_of"] == 128
    assert n["lora"]["param_device"] == "neuron:0" and "adapter_model.safetensors" in n["lora"]["adapter_files"]
    assert n["graphs"] >= 2  # the compiled training and generate's auto-compile went through the backend


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["allreduce", "ddp"])
def test_data_parallel_with_two_ranks_over_the_neuron_process_group(tmp_path, mode):
    out = tmp_path / "ddp.json"
    proc = _emulate(["--nproc", "2", str(PROGRAMS / "ddp_job.py"), str(out), mode], cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["world"] == 2 and len(result["losses"]) == 3
    assert result["losses"][-1] < result["losses"][0]


@pytest.mark.slow
def test_emulate_passes_arguments_and_exit_code(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(
        "import sys, torch\n"
        "print(sys.argv[1:], torch.ones(2, device='neuron').sum().item(), __name__)\n"
        "sys.exit(7)\n"
    )
    proc = _emulate([str(script), "--help", "-m", "x"], cwd=tmp_path)
    assert proc.returncode == 7, proc.stderr
    assert "['--help', '-m', 'x'] 2.0 __main__" in proc.stdout
    assert proc.stderr.count("neuron device emulated on CPU") == 1

    (tmp_path / "modprog.py").write_text("import sys, torch_neuronx\nprint('module', sys.argv[1:])\n")
    proc = _emulate(["-m", "modprog", "a"], cwd=tmp_path)
    assert proc.returncode == 0 and "module ['a']" in proc.stdout, proc.stderr


@pytest.mark.slow
def test_emulate_refuses_when_real_torch_neuronx_is_installed(tmp_path):
    fake = tmp_path / "site" / "torch_neuronx"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (tmp_path / "prog.py").write_text("print('ran')\n")
    proc = _emulate([str(tmp_path / "prog.py")], cwd=tmp_path, env=_env(tmp_path / "site"))
    assert proc.returncode == 2 and "ran" not in proc.stdout
    assert "torch-neuronx is installed" in proc.stderr


def test_stand_in_module_is_not_importable_outside_the_emulator():
    proc = subprocess.run([sys.executable, "-c", "import importlib.util as u; print(u.find_spec('torch_neuronx'))"],
                          env=_env(), capture_output=True, text=True)
    assert proc.stdout.strip() == "None"


LOSS = re.compile(r"epoch \d+ step \d+ loss [\d.]+")


@pytest.mark.slow
def test_migrated_example_matches_the_legacy_original(tmp_path):
    """Before/after equivalence: the legacy example on CPU (torch_xla test double) and its migration on the
    emulated device print the same losses."""
    legacy = tmp_path / "legacy"
    shutil.copytree(ROOT / "examples" / "xla-training", legacy)
    migrated = tmp_path / "migrated"
    shutil.copytree(legacy, migrated)
    args = ["--epochs", "1", "--num-samples", "512", "--log-every", "4", "--output-dir", "ckpt"]

    original = subprocess.run([sys.executable, "train.py", *args], cwd=legacy, env=_env(STUBS),
                              capture_output=True, text=True, timeout=120)
    assert original.returncode == 0, original.stderr[-3000:]

    rewrite = subprocess.run([sys.executable, "-m", "neuron_migrate", "rewrite", "-q", str(migrated)], env=_env(),
                             capture_output=True, text=True, timeout=120)
    assert rewrite.returncode == 1, rewrite.stdout + rewrite.stderr
    train = migrated / "train.py"
    code = train.read_text()
    # The step a human finishes by hand (the TODO names it): move the training batch to the device.
    code = re.sub(
        r"(\n(\s*)# TODO\(neuron-migrate NM140\)[^\n]*\n\s*for step, \(inputs, labels\) in enumerate\(loader\):\n)",
        lambda m: m.group(1) + m.group(2) + '    inputs, labels = inputs.to("neuron"), labels.to("neuron")\n',
        code,
    )
    train.write_text(code)
    after = _emulate(["--nproc", "1", "train.py", *args], cwd=migrated, timeout=180)
    assert after.returncode == 0, after.stdout[-2000:] + after.stderr[-3000:]

    before_losses = LOSS.findall(original.stdout + original.stderr)
    after_losses = LOSS.findall(after.stdout + after.stderr)
    assert before_losses and after_losses == before_losses


def _data_parallel_reference(program, world):
    """``world`` replicas trained in one CPU process: each step averages the gradients of the shards."""
    model = program.build_model()
    optimizer = program.make_optimizer(model)
    inputs, targets = program.make_data(world)
    losses = {rank: [] for rank in range(world)}
    for step in range(program.STEPS):
        grads = []
        for rank in range(world):
            optimizer.zero_grad()
            shard = slice(rank * program.SHARD, (rank + 1) * program.SHARD)
            loss = program.loss_of(model, inputs[step, shard], targets[step, shard])
            loss.backward()
            grads.append([p.grad.clone() for p in model.parameters()])
            losses[rank].append(loss.item())
        for param, *shard_grads in zip(model.parameters(), *grads):
            param.grad = torch.stack(shard_grads).mean(dim=0)
        optimizer.step()
    params = {name: p.detach().flatten().tolist() for name, p in model.named_parameters()}
    return losses, params


def _legacy_builders(name: str) -> types.SimpleNamespace:
    """A legacy program's model, data and optimizer builders. Only those are needed, so its source runs
    without its torch_xla lines: importing the test double into this process would make transformers
    take its XLA code paths in every later test."""
    source = (PROGRAMS / name).read_text(encoding="utf-8")
    kept = "\n".join(line for line in source.splitlines() if not line.startswith(("import torch_xla", "xr.")))
    namespace = {"__name__": name.removesuffix(".py")}
    exec(compile(kept, name, "exec"), namespace)  # noqa: S102 - our own test program
    return types.SimpleNamespace(**namespace)


@pytest.fixture
def legacy_data_parallel():
    return _legacy_builders("legacy_data_parallel.py")


@pytest.mark.slow
def test_migrated_xmp_spawn_training_is_data_parallel(tmp_path, legacy_data_parallel):
    """The common legacy shape (xmp.spawn, no DDP, xm.optimizer_step) migrated: two ranks train as two
    data-parallel replicas, one rank as plain single-process training."""
    script = tmp_path / "train.py"
    shutil.copy(PROGRAMS / "legacy_data_parallel.py", script)
    rewrite = subprocess.run([sys.executable, "-m", "neuron_migrate", "rewrite", "-q", str(script)], env=_env(),
                             capture_output=True, text=True, timeout=120)
    assert rewrite.returncode == 1, rewrite.stdout + rewrite.stderr
    code = script.read_text()
    assert "torch_xla" not in code and "TODO(neuron-migrate" not in code
    assert code.count('dist.init_process_group("neuron")') == 1 and "_average_gradients(optimizer)\n" in code

    for nproc in (2, 1):
        out = tmp_path / f"run{nproc}"
        proc = _emulate([*(["--nproc", str(nproc)] if nproc > 1 else []), str(script), str(out)], cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        losses, params = _data_parallel_reference(legacy_data_parallel, nproc)
        for rank in range(nproc):
            result = json.loads((tmp_path / f"run{nproc}.{rank}.json").read_text())
            assert result["world"] == nproc
            _close(result["losses"], losses[rank])
            assert result["params"].keys() == params.keys()
            for name, values in params.items():
                _close(result["params"][name], values)


# The program names the two weights; the same split found through named_parameters(), as LLM scripts do it.
BY_ATTRIBUTE = """    xs.mark_sharding(model[0].weight, mesh, ("model", None))
    xs.mark_sharding(model[2].weight, mesh, (None, "model"))
"""
BY_NAME = """    for name, param in model.named_parameters():
        if name == "0.weight":
            xs.mark_sharding(param, mesh, ("model", None))
        elif name == "2.weight":
            xs.mark_sharding(param, mesh, (None, "model"))
"""
LAYERS = {
    BY_ATTRIBUTE: ("model[0]", "model[2]"),
    BY_NAME: ('model.get_submodule(name.rpartition(".")[0])',) * 2,
}


@pytest.mark.slow
@pytest.mark.parametrize("sharding", [BY_ATTRIBUTE, BY_NAME], ids=["attribute", "named_parameters"])
def test_migrated_spmd_tensor_parallel_training_shards_the_weights_and_trains_as_one_model(tmp_path, sharding):
    """An SPMD program that split two Linear weights with mark_sharding, migrated: under torchrun each rank
    holds half of each weight, and the two ranks train exactly the model one process trains on the CPU."""
    legacy = _legacy_builders("legacy_tensor_parallel.py")
    script = tmp_path / "train.py"
    source = (PROGRAMS / "legacy_tensor_parallel.py").read_text(encoding="utf-8")
    assert BY_ATTRIBUTE in source
    script.write_text(source.replace(BY_ATTRIBUTE, sharding), encoding="utf-8")
    rewrite = subprocess.run([sys.executable, "-m", "neuron_migrate", "rewrite", "-q", str(script)], env=_env(),
                             capture_output=True, text=True, timeout=120)
    assert rewrite.returncode == 1, rewrite.stdout + rewrite.stderr
    code = script.read_text()
    assert "torch_xla" not in code and "TODO(neuron-migrate" not in code
    first, second = LAYERS[sharding]
    assert f"parallelize_module({first}, mesh, ColwiseParallel(output_layouts=Replicate()))" in code
    assert f"parallelize_module({second}, mesh, RowwiseParallel(input_layouts=Replicate()))" in code
    assert code.count('torch.neuron.set_device(int(os.environ.get("LOCAL_RANK", "0")))') == 1

    model = legacy.build_model()
    optimizer = legacy.make_optimizer(model)
    inputs, targets = legacy.make_data()
    losses = []
    for step in range(legacy.STEPS):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    params = {name: p.detach().flatten().tolist() for name, p in model.named_parameters()}

    for nproc in (2, 1):
        out = tmp_path / f"run{nproc}"
        proc = _emulate(["--nproc", str(nproc), str(script), str(out)], cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        for rank in range(nproc):
            result = json.loads((tmp_path / f"run{nproc}.{rank}.json").read_text())
            assert result["world"] == nproc
            assert result["local_shape"] == [16 // nproc, 8]  # this rank's rows of the first weight
            _close(result["losses"], losses, tol=1e-5)
            assert result["params"].keys() == params.keys()
            for name, values in params.items():
                _close(result["params"][name], values, tol=1e-5)


@pytest.mark.slow
def test_compiled_training_step_trains_on_neuron_and_matches_eager_cpu(tmp_path):
    """A step compiled whole with torch_xla.compile(full_graph=True) is migrated without fullgraph (backward and
    the optimizer step are graph breaks dynamo would refuse), trains through the neuron backend and gives the
    losses of the same loop run eagerly on the CPU."""
    legacy = tmp_path / "legacy.py"
    shutil.copy(PROGRAMS / "xla_compiled_step.py", legacy)
    original = subprocess.run([sys.executable, str(legacy), str(tmp_path / "cpu.json")], env=_env(STUBS),
                              capture_output=True, text=True, timeout=120)
    assert original.returncode == 0, original.stderr[-3000:]

    migrated = tmp_path / "migrated.py"
    shutil.copy(legacy, migrated)
    rewrite = subprocess.run([sys.executable, "-m", "neuron_migrate", "rewrite", "-q", str(migrated)], env=_env(),
                             capture_output=True, text=True, timeout=120)
    assert rewrite.returncode == 1, rewrite.stdout + rewrite.stderr
    code = migrated.read_text()
    assert 'torch.compile(self.step_fn, backend="neuron")' in code and "import torch_xla" not in code
    assert "# neuron-migrate(NM116): fullgraph not set: `self.step_fn` is training code" in code

    after = _emulate([str(migrated), str(tmp_path / "neuron.json")], cwd=tmp_path, timeout=180)
    assert after.returncode == 0, after.stdout[-2000:] + after.stderr[-3000:]
    cpu = json.loads((tmp_path / "cpu.json").read_text())
    neuron = json.loads((tmp_path / "neuron.json").read_text())
    assert cpu["device"] == "cpu" and neuron["device"].startswith("neuron")
    assert neuron["graphs"] >= 1  # the step went through torch.compile's neuron backend
    assert neuron["losses"][-1] < neuron["losses"][0]
    _close(cpu["losses"], neuron["losses"], tol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("keep", [False, True], ids=["default", "keep-dual-stack"])
def test_a_script_that_picks_its_device_through_a_try_import_trains_on_neuron_as_on_cpu(tmp_path, keep):
    """The dual-stack shape: without torch_xla the script trains on the host; migrated, the same guard finds
    TorchNeuron, so it trains on the neuron device, to the same losses (and the host fallback stays)."""
    legacy = PROGRAMS / "dual_stack_train.py"
    cpu = subprocess.run([sys.executable, str(legacy), str(tmp_path / "cpu.json")], env=_env(),
                         capture_output=True, text=True, timeout=120)
    assert cpu.returncode == 0, cpu.stderr[-3000:]
    script = tmp_path / "train.py"
    shutil.copy(legacy, script)
    flags = ["--keep-dual-stack"] if keep else []
    rewrite = subprocess.run([sys.executable, "-m", "neuron_migrate", "rewrite", "-q", *flags, str(script)],
                             env=_env(), capture_output=True, text=True, timeout=120)
    assert rewrite.returncode == 1, rewrite.stdout + rewrite.stderr
    code = script.read_text()
    assert "import torch_neuronx" in code and ("import torch_xla" in code) is keep

    neuron = _emulate([str(script), str(tmp_path / "neuron.json")], cwd=tmp_path)
    assert neuron.returncode == 0, neuron.stdout[-2000:] + neuron.stderr[-3000:]
    on_cpu, on_neuron = (json.loads((tmp_path / f"{side}.json").read_text()) for side in ("cpu", "neuron"))
    assert on_cpu["device"] == "cpu" and on_neuron["device"].startswith("neuron")
    _close(on_cpu["losses"], on_neuron["losses"])

    # off the device the migrated script still falls back to the host, as the legacy one did without torch_xla
    again = subprocess.run([sys.executable, str(script), str(tmp_path / "host.json")], env=_env(),
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads((tmp_path / "host.json").read_text())["device"] == "cpu"


@pytest.mark.slow
@pytest.mark.parametrize("ranks", [1, 2])
def test_a_cuda_script_rewritten_from_cuda_trains_on_the_neuron_device(tmp_path, ranks):
    script = tmp_path / "cuda_train.py"
    shutil.copy(PROGRAMS / "cuda_train.py", script)
    rewrite = subprocess.run([sys.executable, "-m", "neuron_migrate", "rewrite", "--from", "cuda", "--no-cache",
                              str(script)], env=_env(), capture_output=True, text=True, timeout=120)
    assert rewrite.returncode == 1, rewrite.stdout + rewrite.stderr  # 1: changed
    code = script.read_text()
    assert ".cuda(" not in code and '"cuda"' not in code and '"nccl"' not in code
    args = ["--nproc", str(ranks)] if ranks > 1 else []
    out = tmp_path / "out.json"
    proc = _emulate([*args, str(script), str(out)], cwd=tmp_path, timeout=180)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["device"] == "neuron:0" and result["device_count"] >= 1
    assert result["losses"][-1] < result["losses"][0]
    if ranks > 1:
        assert result["backend"] == "neuron"


@pytest.mark.slow
def test_a_cuda_scaler_loop_rewritten_from_cuda_trains_in_bf16_on_the_neuron_device(tmp_path):
    script = tmp_path / "cuda_scaler_train.py"
    shutil.copy(PROGRAMS / "cuda_scaler_train.py", script)
    rewrite = subprocess.run([sys.executable, "-m", "neuron_migrate", "rewrite", "--from", "cuda", "--no-cache",
                              str(script)], env=_env(), capture_output=True, text=True, timeout=120)
    assert rewrite.returncode == 1, rewrite.stdout + rewrite.stderr  # 1: changed
    code = script.read_text().split('"""', 2)[2]  # the code, after the docstring
    code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith("#"))
    assert "scaler" not in code.lower() and "torch.cuda" not in code and '"cuda"' not in code
    out = tmp_path / "out.json"
    proc = _emulate([str(script), str(out)], cwd=tmp_path, timeout=180)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    # the device type test now names the accelerator, so the autocast it gates runs there, in bf16
    assert result["device"] == "neuron:0" and result["device_type"] == "neuron"
    assert result["autocast_dtype"] == "torch.bfloat16"
    assert result["losses"][-1] < result["losses"][0]


@pytest.mark.slow
def test_a_stock_trainer_script_rewritten_from_cuda_trains_with_the_recipe_on_the_neuron_device(tmp_path):
    script = tmp_path / "hf_stock_trainer.py"
    shutil.copy(PROGRAMS / "hf_stock_trainer.py", script)
    rewrite = subprocess.run([sys.executable, "-m", "neuron_migrate", "rewrite", "--from", "cuda", "--no-cache",
                              str(script)], env=_env(), capture_output=True, text=True, timeout=120)
    assert rewrite.returncode == 1, rewrite.stdout + rewrite.stderr  # 1: changed
    code = script.read_text()
    assert "torch._dynamo.config.automatic_dynamic_shapes = False\n" in code
    assert 'os.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1")\n' in code
    assert 'cache_implementation="static"' in code and '"cuda"' not in code
    out = tmp_path / "out.json"
    proc = _emulate([str(script), str(out), str(tmp_path)], cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    # the Trainer took the recipe: the neuron device, its compile backend (picked, not spelled out), bf16
    assert result["device"] == "neuron:0" and result["param_device"] == "neuron:0"
    assert result["torch_compile"] is True and result["backend"] == "neuron" and result["bf16"] is True
    assert result["losses"][-1] < result["losses"][0]
    # generate() ran with the static cache: the prompt (2 tokens) and 4 new ones
    assert len(result["generated"][0]) == 6
