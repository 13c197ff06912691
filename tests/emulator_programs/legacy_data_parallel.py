"""A legacy PyTorch/XLA data-parallel training script in its most common shape: no DDP, xmp.spawn starts the
workers and ``xm.optimizer_step`` averages the gradients over the replicas.

The tests migrate it and run it on the emulated device. Each rank trains a small MLP on its own shard of every
batch and writes its per-step losses and final parameters to ``OUT.<rank>.json``.
"""

import json
import sys

import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr

STEPS = 4
SHARD = 4  # samples per rank and step


def build_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))


def make_optimizer(model):
    return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def loss_of(model, inputs, targets):
    return torch.nn.functional.mse_loss(model(inputs), targets)


def make_data(world):
    inputs = torch.randn(STEPS, world * SHARD, 8, generator=torch.Generator().manual_seed(1))
    return inputs, inputs.sin().sum(dim=-1, keepdim=True)


def _mp_fn(index, out):
    device = xm.xla_device()
    rank, world = xr.global_ordinal(), xr.world_size()
    model = build_model().to(device)
    optimizer = make_optimizer(model)
    inputs, targets = make_data(world)
    shard = slice(rank * SHARD, (rank + 1) * SHARD)
    losses = []
    for step in range(STEPS):
        optimizer.zero_grad()
        loss = loss_of(model, inputs[step, shard].to(device), targets[step, shard].to(device))
        loss.backward()
        xm.optimizer_step(optimizer)
        losses.append(loss.item())
    result = {
        "rank": rank,
        "world": world,
        "losses": losses,
        "params": {name: p.detach().cpu().flatten().tolist() for name, p in model.named_parameters()},
    }
    with open(f"{out}.{rank}.json", "w", encoding="utf-8") as f:
        json.dump(result, f)


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=(sys.argv[1],))
