"""A legacy PyTorch/XLA inference script: a small model's logits for a fixed batch."""

import torch
import torch.nn as nn

import torch_xla.core.xla_model as xm


def main():
    device = xm.xla_device()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 3)).to(device).eval()
    batch = torch.randn(4, 8).to(device)
    with torch.no_grad():
        logits = model(batch)
        scores = model(batch * 2).softmax(dim=-1)
    xm.mark_step()
    print("predictions", logits.argmax(dim=-1).cpu().tolist(), scores.max().item())


if __name__ == "__main__":
    main()
