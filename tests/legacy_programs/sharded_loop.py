"""A legacy PyTorch/XLA training loop: a small classifier on synthetic data, one shard per replica."""

import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Subset, TensorDataset

import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_backend  # noqa: F401  (registers the "xla" process-group backend)
import torch_xla.runtime as xr


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--dropout", type=float, default=0.0)
    return parser.parse_args()


def shard(dataset, rank, world):
    return Subset(dataset, list(range(rank, len(dataset), world)))


def main():
    args = parse_args()
    dist.init_process_group("xla")
    device = xm.xla_device()
    torch.manual_seed(0)
    features = torch.randn(512, 16)
    labels = (features[:, :4].argmax(dim=1) + (features[:, 4] > 0).long()) % 4
    data = shard(TensorDataset(features, labels), xr.global_ordinal(), xr.world_size())
    loader = pl.MpDeviceLoader(DataLoader(data, batch_size=args.batch_size, shuffle=True, drop_last=True), device)
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Dropout(args.dropout), nn.Linear(32, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    for step, (inputs, targets) in enumerate(loader):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(inputs), targets)
        loss.backward()
        xm.optimizer_step(optimizer)
        xm.mark_step()
        if step % 10 == 0:
            xm.master_print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
