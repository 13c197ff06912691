"""A CUDA training loop of the common shape: the device falls back to the CPU where no GPU is, a --device flag
defaults by availability, optional float16 autocast with a GradScaler."""

import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--amp", action="store_true", help="float16 autocast with a loss scaler")
    parser.add_argument("--init-scale", type=float, default=2.0**16)
    args = parser.parse_args()
    device = torch.device(args.device)
    torch.cuda.manual_seed_all(0)

    data = TensorDataset(torch.randn(64, 10), torch.randint(0, 3, (64,)))
    loader = DataLoader(data, batch_size=16, shuffle=True)
    model = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(), torch.nn.Linear(32, 3)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    scaler = torch.amp.GradScaler(device.type, init_scale=args.init_scale, enabled=args.amp)

    for epoch in range(3):
        for inputs, labels in loader:
            inputs, labels = inputs.to(device), labels.to(device)
            optimizer.zero_grad()
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=args.amp):
                loss = torch.nn.functional.cross_entropy(model(inputs), labels)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        print(f"epoch {epoch}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
