"""A legacy PyTorch/XLA loop whose training step is traced as one graph with torch_xla.compile, and an extra
forward pass cut off with torch_xla.step()."""

import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_xla


def main():
    device = torch_xla.device()
    torch.manual_seed(0)
    features = torch.randn(128, 8)
    targets = features[:, :2].sum(dim=1, keepdim=True)
    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    @torch_xla.compile(full_graph=True)
    def train_step(x, y):
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    for step in range(12):
        batch = slice(step * 8 % 128, step * 8 % 128 + 8)
        loss = train_step(features[batch].to(device), targets[batch].to(device))
        with torch_xla.step():
            extra = model(features[:4].to(device)).sum()
    print("final", loss.item(), extra.item())


if __name__ == "__main__":
    main()
