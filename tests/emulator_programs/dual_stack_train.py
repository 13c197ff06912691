"""A training script that runs on Trainium through torch_xla when it can and on the host otherwise: the device
comes from a try-import guard, a flag set there steers the step."""

import json
import sys

import torch

try:
    import torch_xla.core.xla_model as xm

    device = xm.xla_device()
    ON_XLA = True
except ImportError:
    device = torch.device("cpu")
    ON_XLA = False


def main(out: str) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.randn(40, 8)
    target = data.sum(dim=1, keepdim=True)
    losses = []
    for step in range(5):
        x = data[step * 8 : (step + 1) * 8].to(device)
        y = target[step * 8 : (step + 1) * 8].to(device)
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        if ON_XLA:
            xm.optimizer_step(optimizer)
            xm.mark_step()
        else:
            optimizer.step()
        losses.append(loss.item())
    result = {"device": str(next(model.parameters()).device), "losses": losses}
    with open(out, "w") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    main(sys.argv[1])
