"""A legacy data-parallel loop in the xmp.spawn shape: no process group of its own, gradients averaged by
xm.optimizer_step. Each rank writes ``<argv[1]>.<rank>.json``: its losses and final weights."""

import json
import sys

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.test.test_utils as test_utils
import torch_xla.utils.utils as xu


def _mp_fn(index):
    torch.manual_seed(0)
    device = xm.xla_device()
    model = nn.Linear(4, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    rank = xm.get_ordinal()
    shard = torch.Generator().manual_seed(rank)
    x, y = torch.randn(8, 4, generator=shard), torch.randn(8, 1, generator=shard)
    tracker = xm.RateTracker()
    losses = []
    for step, (xb, yb) in enumerate(xu.SampleGenerator((x, y), 3)):
        optimizer.zero_grad()
        loss = ((model(xb) - yb) ** 2).mean()
        loss.backward()
        xm.optimizer_step(optimizer)
        tracker.add(xb.shape[0])
        losses.append(loss.item())
        test_utils.print_training_update(device, step, loss.item(), tracker.rate(), tracker.global_rate())
    xm.rendezvous("done")
    ranks = xm.mesh_reduce("ranks", [rank], lambda parts: sorted(r for part in parts for r in part))
    weights = [p.detach().flatten().tolist() for p in model.parameters()]
    with open(f"{sys.argv[1]}.{rank}.json", "w") as out:
        json.dump({"rank": rank, "ranks": ranks, "losses": losses, "weights": weights}, out)


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=())
