"""A legacy PyTorch/XLA SPMD training script with tensor parallelism: one process drives every device, and
``mark_sharding`` splits the first Linear's weight by rows and the second's by columns over a 1-D mesh.

The tests migrate it and run it on the emulated device with torchrun ranks. Each rank writes its per-step
losses and the final parameters (whole, gathered from their shards) to ``OUT.<rank>.json``.
"""

import json
import sys

import numpy as np
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr

xr.use_spmd()

STEPS = 4
BATCH = 8


def build_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))


def make_optimizer(model):
    return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def make_data():
    inputs = torch.randn(STEPS, BATCH, 8, generator=torch.Generator().manual_seed(1))
    return inputs, inputs.sin().sum(dim=-1, keepdim=True)


def whole(param):
    """The parameter's values, gathered when it is stored in shards."""
    full = param.full_tensor() if hasattr(param, "full_tensor") else param
    return full.detach().cpu().flatten().tolist()


def local(param):
    """The part of the parameter this process stores."""
    return param.to_local() if hasattr(param, "to_local") else param


def main(out):
    device = xm.xla_device()
    model = build_model().to(device)
    devices = xr.global_runtime_device_count()
    mesh = xs.Mesh(np.arange(devices), (devices,), ("model",))
    xs.mark_sharding(model[0].weight, mesh, ("model", None))
    xs.mark_sharding(model[2].weight, mesh, (None, "model"))
    optimizer = make_optimizer(model)
    inputs, targets = make_data()
    losses = []
    for step in range(STEPS):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs[step].to(device)), targets[step].to(device))
        loss.backward()
        optimizer.step()
        xm.mark_step()
        losses.append(loss.item())
    result = {
        "world": devices,
        "local_shape": list(local(model[0].weight).shape),
        "losses": losses,
        "params": {name: whole(p) for name, p in model.named_parameters()},
    }
    with open(f"{out}.{xr.global_ordinal()}.json", "w", encoding="utf-8") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1])
