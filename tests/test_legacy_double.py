"""The torch_xla test double runs legacy programs as PJRT did: collectives span every process of the job
even when the program made no process group, so xm.optimizer_step averages gradients across ranks."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow  # every test here starts a legacy program in processes of its own
STUBS = ROOT / "tests" / "stubs"
PROGRAM = ROOT / "tests" / "legacy_programs" / "spawn_dp.py"


def _reference(world_size: int, steps: int = 3):
    """The same training in one process: each step averages the ranks' gradients by hand."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    shards = []
    for rank in range(world_size):
        shard = torch.Generator().manual_seed(rank)
        shards.append((torch.randn(8, 4, generator=shard), torch.randn(8, 1, generator=shard)))
    losses = {rank: [] for rank in range(world_size)}
    for _ in range(steps):
        grads = []
        for rank, (x, y) in enumerate(shards):
            optimizer.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            losses[rank].append(loss.item())
            grads.append([p.grad.clone() for p in model.parameters()])
        for p, *per_rank in zip(model.parameters(), *grads):
            p.grad = sum(per_rank) / world_size
        optimizer.step()
    return losses, [p.detach().flatten().tolist() for p in model.parameters()]


def _run(nproc: int, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT")}
    env.update(PYTHONPATH=str(STUBS), OMP_NUM_THREADS="1")
    out = tmp_path / "result"
    run = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc), str(PROGRAM), str(out)],
        capture_output=True, text=True, timeout=240, env=env,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Training Device=cpu/0 Step=0 Loss=" in run.stdout  # test_utils' log line (ranks may interleave)
    rows = [json.loads(path.read_text()) for path in sorted(tmp_path.glob("result.*.json"))]
    return {row["rank"]: row for row in rows}


@pytest.mark.slow
@pytest.mark.parametrize("nproc", [1, 2])
def test_spawned_ranks_average_gradients_like_pjrt(nproc, tmp_path):
    rows = _run(nproc, tmp_path)
    losses, weights = _reference(nproc)
    assert sorted(rows) == list(range(nproc))
    for rank, row in rows.items():
        assert row["ranks"] == list(range(nproc))  # mesh_reduce saw every rank
        assert row["losses"] == pytest.approx(losses[rank], rel=1e-6, abs=1e-7)
        for got, want in zip(row["weights"], weights):
            assert got == pytest.approx(want, rel=1e-6, abs=1e-7)


def _snippet(code: str, **env_vars) -> dict:
    """Runs ``code`` in a fresh interpreter against the double; it prints one JSON object."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "PJRT_DEVICE", "XLA_USE_BF16", "XLA_DOWNCAST_BF16")}
    env.update(PYTHONPATH=str(STUBS), OMP_NUM_THREADS="1", **env_vars)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


BF16_PROGRAM = """
import json, torch, torch_xla.core.xla_model as xm
x = torch.randn(1000, generator=torch.Generator().manual_seed(0)).to(xm.xla_device())
y = (x * 1.001 + 0.3).exp()
bf16 = lambda t: bool(torch.equal(t, t.bfloat16().float()))
w = torch.zeros(3, dtype=torch.float64).add_(1 / 3)
print(json.dumps({"dtype": str(y.dtype), "x": bf16(x), "y": bf16(y), "w": w[0].item()}))
"""


@pytest.mark.parametrize("flag", ["XLA_USE_BF16", "XLA_DOWNCAST_BF16"])
def test_bf16_flags_hold_float32_results_at_bfloat16_precision(flag):
    off = _snippet(BF16_PROGRAM)
    on = _snippet(BF16_PROGRAM, **{flag: "1"})
    assert off == {"dtype": "torch.float32", "x": False, "y": False, "w": 1 / 3}
    assert on["dtype"] == "torch.float32" and on["x"] and on["y"]  # still reported as float32
    # float64 goes to bfloat16 under XLA_USE_BF16 and to float32 under XLA_DOWNCAST_BF16.
    third = torch.tensor(1 / 3, dtype=torch.float64)
    narrow = torch.bfloat16 if flag == "XLA_USE_BF16" else torch.float32
    assert on["w"] == third.to(narrow).double().item()


def test_bf16_flag_follows_torch_xla_env_parsing():
    assert _snippet(BF16_PROGRAM, XLA_USE_BF16="0")["y"] is False
    assert _snippet(BF16_PROGRAM, XLA_USE_BF16="true")["y"] is True


AMP_PROGRAM = """
import json, torch, torch_xla.amp, torch_xla.core.xla_model as xm
device = xm.xla_device()
layer = torch.nn.Linear(4, 4).to(device)
x = torch.randn(2, 4).to(device)
result = {}
with torch.autocast("xla", dtype=torch.bfloat16):
    result["torch_autocast"] = str(layer(x).dtype)
try:
    with torch_xla.amp.autocast(device):
        result["xla_amp"] = str(layer(x).dtype)
except AttributeError as error:
    result["xla_amp"] = "AttributeError"
print(json.dumps(result))
"""


def test_xla_autocast_is_bfloat16_and_torch_xla_amp_fails_outside_tpu_and_neuron():
    # torch.autocast("xla") casts matmuls on any XLA device; torch_xla.amp.autocast only sets itself up on TPU
    # and Neuron, and on XLA:CPU its `with` raises.
    assert _snippet(AMP_PROGRAM) == {"torch_autocast": "torch.bfloat16", "xla_amp": "AttributeError"}
    assert _snippet(AMP_PROGRAM, PJRT_DEVICE="NEURON") == {"torch_autocast": "torch.bfloat16",
                                                           "xla_amp": "torch.bfloat16"}


SYNCFREE_PROGRAM = """
import json, torch
from torch_xla.amp import syncfree

def run(kind, found_infs, **options):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    optimizer = (getattr(syncfree, kind) if found_infs else getattr(torch.optim, kind))(model.parameters(), **options)
    x = torch.randn(4, 3)
    for found_inf in found_infs or [None, None, None]:
        optimizer.zero_grad()
        model(x).pow(2).sum().backward()
        optimizer.step() if found_inf is None else optimizer.step(found_inf=torch.tensor(float(found_inf)))
    return [p.detach().flatten().tolist() for p in model.parameters()]

options = {"SGD": {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01}, "AdamW": {"lr": 0.1}, "Adam": {"lr": 0.1, "weight_decay": 0.01}}
print(json.dumps({kind: {"torch": run(kind, None, **o), "skips": run(kind, [1, 0, 1, 0, 0, 1], **o)} for kind, o in options.items()}))
"""


def test_syncfree_optimizers_skip_steps_with_found_inf_and_otherwise_match_torch():
    for kind, row in _snippet(SYNCFREE_PROGRAM).items():
        for got, want in zip(row["skips"], row["torch"]):  # three steps taken, three skipped
            assert got == pytest.approx(want, rel=1e-5, abs=1e-6), kind


RNG_PROGRAM = """
import json, torch, torch_xla, torch_xla.core.xla_model as xm
default = xm.get_rng_state()
torch.manual_seed(5)
after_torch_seed = xm.get_rng_state()
torch_xla.manual_seed(7)
seeded = xm.get_rng_state()
first = torch.rand(3).tolist()
xm.set_rng_state(7)
again = torch.rand(3).tolist()
with xm.fork_rng():
    torch.rand(10)
    xm.set_rng_state(1)
forked = [xm.get_rng_state(), torch.rand(3).tolist()]
xm.set_rng_state(7); torch.rand(3)
print(json.dumps({"default": default, "after_torch_seed": after_torch_seed, "seeded": seeded,
                  "same": first == again, "forked": forked, "next": torch.rand(3).tolist()}))
"""


def test_rng_state_starts_at_xla_default_seed_and_fork_rng_restores_it():
    row = _snippet(RNG_PROGRAM)
    assert row["default"] == 101 and row["after_torch_seed"] == 101  # torch.manual_seed leaves XLA's seed alone
    assert row["seeded"] == 7 and row["same"]
    assert row["forked"] == [7, row["next"]]


COLLECTIVE_PROGRAM = """
import json, torch, torch_xla.core.xla_model as xm
from torch_xla.utils import utils
single = xm.all_reduce(xm.REDUCE_SUM, torch.ones(2), scale=0.5)
listed = [torch.ones(2)]
returned = xm.all_reduce(xm.REDUCE_SUM, listed, scale=0.5)
print(json.dumps({"single": single.tolist(), "listed": listed[0].tolist(), "same_list": returned is listed,
                  "flag": utils.getenv_as("SOME_FLAG", bool, defval=False)}))
"""


def test_one_replica_all_reduce_is_a_copy_unless_xla_always_allreduce():
    assert _snippet(COLLECTIVE_PROGRAM, SOME_FLAG="2") == {
        "single": [1.0, 1.0], "listed": [1.0, 1.0], "same_list": True, "flag": True}
    assert _snippet(COLLECTIVE_PROGRAM, SOME_FLAG="0", XLA_ALWAYS_ALLREDUCE="1") == {
        "single": [0.5, 0.5], "listed": [0.5, 0.5], "same_list": True, "flag": False}
