"""A mixed-precision training loop written for CUDA GPUs (fp16 autocast, a GradScaler, a device type picked by a
test for "cuda"); the test runs its `rewrite --from cuda` on the emulated neuron device.

usage: cuda_scaler_train.py OUT.json
"""

import json
import sys
from contextlib import nullcontext

import torch
import torch.nn as nn
from torch.cuda.amp import GradScaler, autocast

device = "cuda"
device_type = "cuda" if "cuda" in device else "cpu"
amp = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type, dtype=torch.bfloat16)


def main(out):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = GradScaler()
    inputs = torch.randn(64, 16)
    targets = inputs.sum(dim=1, keepdim=True)
    losses = []
    for _ in range(5):
        x, y = inputs.to(device), targets.to(device)
        with autocast():
            prediction = model(x)
        with amp:
            loss = nn.functional.mse_loss(prediction.float(), y)
        optimizer.zero_grad()
        with torch.cuda.nvtx.range("backward"):
            scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
    result = {"losses": losses, "device": str(next(model.parameters()).device), "device_type": device_type,
              "autocast_dtype": str(prediction.dtype)}
    with open(out, "w") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    main(sys.argv[1])
