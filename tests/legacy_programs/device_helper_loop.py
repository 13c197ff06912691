"""A legacy PyTorch/XLA loop whose device helper falls back to the CPU where torch_xla is missing."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def pick_device():
    try:
        import torch_xla.core.xla_model as xm
    except ImportError:
        return torch.device("cpu")
    return xm.xla_device()


def main():
    device = pick_device()
    torch.manual_seed(0)
    features = torch.randn(64, 8)
    targets = features.sum(dim=1, keepdim=True)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(8):
        batch = slice(step * 8, step * 8 + 8)
        inputs, wanted = features[batch].to(device), targets[batch].to(device)
        optimizer.zero_grad()
        loss = F.mse_loss(model(inputs), wanted)
        loss.backward()
        optimizer.step()
        if "xla" in str(device):
            import torch_xla.core.xla_model as xm

            xm.mark_step()
    print("final loss", loss.item())


if __name__ == "__main__":
    main()
