"""A training script written for CUDA GPUs; the test runs its `rewrite --from cuda` on the emulated neuron device.

usage: cuda_train.py OUT.json   (under torchrun, or alone)
"""

import json
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

torch.backends.cudnn.benchmark = True
device = "cuda" if torch.cuda.is_available() else "cpu"


def main(out):
    distributed = "WORLD_SIZE" in os.environ
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if distributed:
        dist.init_process_group(backend="nccl")
        torch.cuda.set_device(local_rank)
    torch.cuda.manual_seed_all(0)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)).cuda()
    if distributed:
        # with device_ids, DDP moves the inputs on side streams and records them (record_stream)
        model = DDP(model, device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    inputs = torch.randn(64, 16)
    targets = inputs.sum(dim=1, keepdim=True)
    losses = []
    for _ in range(5):
        x, y = inputs.cuda(non_blocking=True), targets.to("cuda")
        with torch.autocast("cuda", dtype=torch.float16):
            loss = nn.functional.mse_loss(model(x).float(), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        losses.append(loss.item())
    result = {
        "losses": losses,
        "device": str(next(model.parameters()).device),
        "device_count": torch.cuda.device_count(),
        "backend": dist.get_backend() if distributed else None,
    }
    if not distributed or dist.get_rank() == 0:
        with open(out, "w") as fh:
            json.dump(result, fh)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
