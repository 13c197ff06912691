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
