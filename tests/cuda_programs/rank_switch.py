"""A CUDA program of nanoGPT's shape: distributed whenever RANK is set, else one device from its --device flag."""

import argparse
import os

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda")
args = parser.parse_args()

ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    dist.init_process_group(backend="nccl")
    device = f"cuda:{int(os.environ['LOCAL_RANK'])}"
    torch.cuda.set_device(device)
else:
    device = args.device

torch.manual_seed(0)
model = torch.nn.Linear(4, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(8, 4).to(device)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
