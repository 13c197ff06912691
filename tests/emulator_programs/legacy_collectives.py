"""Legacy PyTorch/XLA collectives in the shapes real training code uses them: a scaled all-reduce of one
tensor, a max, a list reduced in place, the in-place average of the optimizer's gradients, gathers along
dims 0, 1 and -1 and a broadcast from the last rank.

Each rank writes what it computed to ``OUT.<rank>.json``; the tests compare the torch_xla run (the test
double) with the migrated run on the emulated device.
"""

import json
import sys

import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr


def local_values(rank, device):
    """Tensors that differ per rank, so that every collective's result depends on all of them."""
    base = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    cube = torch.arange(8, dtype=torch.float32).reshape(2, 2, 2) * (rank + 1)
    return (base + 10 * rank).to(device), cube.to(device)


def averaged_gradients(rank, world, device):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    inputs = torch.full((4, 3), float(rank + 1)).to(device)
    model(inputs).pow(2).sum().backward()
    gradients = xm._fetch_gradients(optimizer)
    xm.all_reduce(xm.REDUCE_SUM, gradients, scale=1.0 / world)
    return [p.grad.cpu().flatten().tolist() for p in model.parameters()]


def _mp_fn(index, out):
    device = xm.xla_device()
    rank, world = xr.global_ordinal(), xr.world_size()
    value, cube = local_values(rank, device)
    total = xm.all_reduce(xm.REDUCE_SUM, value, scale=0.5)
    peak = xm.all_reduce(xm.REDUCE_MAX, value)
    counts = xm.all_reduce(xm.REDUCE_SUM, [value.clone(), cube.clone()], scale=2.0)
    rows = xm.all_gather(value)
    columns = xm.all_gather(value, dim=-1)
    middle = xm.all_gather(cube, dim=1)
    shared = [value.clone(), cube.clone()]
    xm.collective_broadcast(shared, root_ordinal=world - 1)
    result = {
        "rank": rank,
        "world": world,
        "device": value.device.type,
        "value": value.cpu().tolist(),
        "total": total.cpu().tolist(),
        "peak": peak.cpu().tolist(),
        "counts": [tensor.cpu().tolist() for tensor in counts],
        "rows": rows.cpu().tolist(),
        "columns": columns.cpu().tolist(),
        "middle": middle.cpu().tolist(),
        "shared": [tensor.cpu().tolist() for tensor in shared],
        "gradients": averaged_gradients(rank, world, device),
    }
    with open(f"{out}.{rank}.json", "w", encoding="utf-8") as f:
        json.dump(result, f)


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=(sys.argv[1],))
