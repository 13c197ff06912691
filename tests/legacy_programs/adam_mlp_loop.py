"""A legacy PyTorch/XLA loop: an MLP with a batch norm, trained with Adam on synthetic regression data.

The bias of the layer the batch norm follows has an exact gradient of zero: what backward leaves there is
rounding residue, which Adam scales up to a tenth of the learning rate in a direction of its own on each side.
"""

import argparse

import torch
import torch.nn as nn

import torch_xla.core.xla_model as xm


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--steps", type=int, default=30)
    return parser.parse_args()


def main():
    args = parse_args()
    device = xm.xla_device()
    torch.manual_seed(0)
    inputs = torch.randn(256, 10)
    targets = torch.sin(inputs[:, :1]) + 0.1 * inputs[:, 1:2]
    model = nn.Sequential(nn.Linear(10, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, 1)).to(device)
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for step in range(args.steps):
        batch = slice((step * 32) % 256, (step * 32) % 256 + 32)
        x, y = inputs[batch].to(device), targets[batch].to(device)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        xm.optimizer_step(optimizer)
        xm.mark_step()
    xm.master_print(f"final loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
