"""The distributed rules (NM120-NM136) beyond their fixtures: migrated code must actually run.

A legacy script that uses the rank queries and collectives is migrated, then executed with stock
CPU PyTorch: once as a plain script (no launcher, no process group) and once as two ranks over
gloo with the environment torchrun would set. Both runs must give what PyTorch/XLA gave.
"""

from __future__ import annotations

import os
import runpy
import socket
import subprocess
import sys
import textwrap

import pytest
import torch

LEGACY_SCRIPT = textwrap.dedent(
    '''
    import os
    import sys

    import torch
    import torch.distributed as dist
    import torch_xla.core.xla_model as xm
    import torch_xla.runtime as xr


    def main(out_dir):
        if "WORLD_SIZE" in os.environ:
            dist.init_process_group("gloo")
        rank = xm.get_ordinal()
        world = xr.world_size()
        local = xr.local_ordinal()
        value = torch.tensor([float(rank + 1)])
        total = xm.all_reduce(xm.REDUCE_SUM, value)
        peak = xm.all_reduce("max", value, scale=10.0)
        grads = [torch.ones(2) * (rank + 1), torch.ones(3)]
        xm.all_reduce(xm.REDUCE_SUM, grads, scale=1.0 / world)
        gathered = xm.all_gather(value)
        best = xm.mesh_reduce("best", rank, max)
        xm.rendezvous("before_save")
        xm.master_print("hello from", rank, flush=True)
        xm.save({"rank": rank}, os.path.join(out_dir, "checkpoint.pt"))
        torch.save(
            {
                "rank": rank,
                "world": world,
                "local": local,
                "master": xm.is_master_ordinal(local=False),
                "value": value,
                "total": total,
                "peak": peak,
                "grads": grads,
                "gathered": gathered,
                "best": best,
            },
            os.path.join(out_dir, f"result_{rank}.pt"),
        )
        if dist.is_initialized():
            dist.destroy_process_group()


    if __name__ == "__main__":
        main(sys.argv[1])
    '''
)


@pytest.fixture(scope="module")
def migrated_script(tmp_path_factory, plan):
    from neuron_migrate.migrate.engine import migrate_python

    result = migrate_python(LEGACY_SCRIPT, "train.py", plan)
    assert "torch_xla" not in result.code
    assert "TODO(neuron-migrate" not in result.code
    path = tmp_path_factory.mktemp("script") / "train.py"
    path.write_text(result.code, encoding="utf-8")
    return path


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"}}
    env["PYTHONWARNINGS"] = "ignore"
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_migrated_script_runs_as_a_single_process(migrated_script, tmp_path, monkeypatch, capsys):
    # In this process: no launcher environment and no process group, like `python train.py`.
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    assert not torch.distributed.is_initialized()
    runpy.run_path(str(migrated_script))["main"](str(tmp_path))
    assert capsys.readouterr().out == "hello from 0\n"
    result = torch.load(tmp_path / "result_0.pt")
    assert (result["rank"], result["world"], result["local"], result["master"]) == (0, 1, 0, True)
    # With one replica xm.all_reduce / xm.all_gather returned an unscaled copy of the input.
    assert torch.equal(result["total"], result["value"]) and result["total"] is not result["value"]
    assert torch.equal(result["peak"], result["value"])
    assert torch.equal(result["grads"][0], torch.ones(2)) and torch.equal(result["grads"][1], torch.ones(3))
    assert torch.equal(result["gathered"], result["value"])
    assert result["best"] == 0
    assert torch.load(tmp_path / "checkpoint.pt") == {"rank": 0}


@pytest.mark.slow
def test_migrated_script_runs_on_two_ranks(migrated_script, tmp_path):
    port = str(_free_port())
    processes = []
    for rank in range(2):
        env = _clean_env()
        env.update(
            RANK=str(rank),
            LOCAL_RANK=str(rank),
            WORLD_SIZE="2",
            LOCAL_WORLD_SIZE="2",
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=port,
        )
        processes.append(
            subprocess.Popen(
                [sys.executable, str(migrated_script), str(tmp_path)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outputs = []
    for process in processes:
        try:
            stdout, stderr = process.communicate(timeout=300)
        finally:
            process.kill()
        assert process.returncode == 0, stderr
        outputs.append(stdout)
    assert outputs == ["hello from 0\n", ""]

    for rank in range(2):
        result = torch.load(tmp_path / f"result_{rank}.pt")
        assert (result["rank"], result["world"], result["local"]) == (rank, 2, rank)
        assert result["master"] is (rank == 0)
        assert torch.equal(result["total"], torch.tensor([3.0]))
        assert torch.equal(result["peak"], torch.tensor([20.0]))
        assert torch.equal(result["grads"][0], torch.full((2,), 1.5))
        assert torch.equal(result["grads"][1], torch.ones(3))
        assert torch.equal(result["gathered"], torch.tensor([1.0, 2.0]))
        assert result["best"] == 1
    # xm.save wrote on each host's rank 0 only; both ranks share a host here.
    assert torch.load(tmp_path / "checkpoint.pt") == {"rank": 0}


def test_rank_inside_fstring_uses_the_free_quote(migrate):
    source = 'import torch_xla.core.xla_model as xm\n\nprint(f"rank {xm.get_ordinal()}")\n'
    code = migrate(source).code
    assert "print(f\"rank {int(os.environ.get('RANK', '0'))}\")" in code
    compile(code, "x.py", "exec")


def test_rank_inside_fstrings_of_both_quotes_is_left_for_a_human(migrate):
    source = "import torch_xla.core.xla_model as xm\n\nprint(f\"{f'{xm.get_ordinal()}'}\")\n"
    result = migrate(source)
    assert "xm.get_ordinal()" in result.code
    assert [f.rule for f in result.findings] == ["NM100"]


def test_no_comments_keeps_code_free_of_markers(migrate):
    source = "import torch_xla.core.xla_model as xm\n\ny = xm.all_reduce(xm.REDUCE_SUM, x)\nxm.save(y, 'y.pt')\n"
    result = migrate(source, no_comments=True)
    assert "neuron-migrate" not in result.code
    assert {f.rule for f in result.findings if f.safety == "review"} == {"NM125", "NM130"}


def test_broadcast_master_param_is_kept_without_ddp(migrate):
    source = "import torch_xla.core.xla_model as xm\n\nxm.broadcast_master_param(model)\n"
    result = migrate(source)
    assert "xm.broadcast_master_param(model)" in result.code
    assert "TODO(neuron-migrate NM129)" in result.code


def test_assigned_master_print_is_not_deleted(migrate):
    source = "import torch_xla.core.xla_model as xm\n\nresult = xm.master_print('x')\nprint(result)\n"
    result = migrate(source)
    assert "result = xm.master_print('x')" in result.code
    assert "TODO(neuron-migrate NM122)" in result.code


@pytest.mark.parametrize(
    "call",
    [
        "xm.master_print(step, xm.not_a_real_api())",
        "xm.save(xm.not_a_real_api(), path)",
        "total = xm.all_reduce('sum', xm.not_a_real_api())",
        "gathered = xm.all_gather(xm.not_a_real_api())",
        "best = xm.mesh_reduce('best', xm.not_a_real_api(), max)",
    ],
)
def test_unmigrated_argument_keeps_the_call_and_its_marker(migrate, call):
    source = f"import torch_xla.core.xla_model as xm\n\n\ndef run(step, path):\n    {call}\n"
    result = migrate(source)
    assert call in result.code
    assert "TODO(neuron-migrate NM100): `torch_xla.core.xla_model.not_a_real_api`" in result.code
    assert migrate(result.code).code == result.code


SPAWNED = (
    "import torch.distributed as dist\n"
    "import torch_xla.distributed.xla_multiprocessing as xmp\n\n\n"
    "def _mp_fn(index):\n"
    "{body}"
    "    print(index)\n\n\n"
    "xmp.spawn(_mp_fn)\n"
)


@pytest.mark.parametrize(
    ("body", "inits", "guarded"),
    [
        # xmp.spawn's workers had no process group: the worker joins one, once
        ("", 1, False),
        # the worker starts its own: that one is migrated, no second one
        ('    dist.init_process_group("xla")\n', 1, False),
        # a backend the rules do not migrate: the user's own set-up stays the only one
        ('    dist.init_process_group("gloo")\n', 1, False),
        # only on some path: the worker joins at its start, the later call is skipped when it did
        ('    if index < 0:\n        dist.init_process_group("xla")\n', 2, True),
    ],
)
def test_spawned_worker_initialises_the_process_group_once(migrate, body, inits, guarded):
    code = migrate(SPAWNED.format(body=body)).code
    assert code.count("dist.init_process_group(") == inits
    assert ('if not dist.is_initialized():\n            dist.init_process_group("neuron")' in code) is guarded
    joins = '\n    if "WORLD_SIZE" in os.environ and not dist.is_initialized():\n        dist.init_process_group("neuron")\n'
    assert (joins in code) is (not body or guarded)
    assert migrate(code).code == code
