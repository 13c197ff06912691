"""A legacy training loop whose whole step (zero_grad, forward, backward, optimizer step) is compiled with
``torch_xla.compile(..., full_graph=True)``; writes the losses and, on the neuron device, the compiled graphs."""

import json
import sys

import torch
import torch_xla
import torch_xla.core.xla_model as xm


class Trainer:
    def __init__(self):
        torch.manual_seed(0)
        self.device = xm.xla_device()
        layers = [torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)]
        self.model = torch.nn.Sequential(*layers).to(self.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.loss_fn = torch.nn.CrossEntropyLoss()
        self.compiled_step_fn = torch_xla.compile(self.step_fn, full_graph=True, name="step_fn")

    def step_fn(self, data, target):
        self.optimizer.zero_grad()
        loss = self.loss_fn(self.model(data), target)
        loss.backward()
        self.optimizer.step()
        return loss

    def train(self, steps):
        generator = torch.Generator().manual_seed(1)
        data = torch.randn(32, 8, generator=generator)
        target = torch.randint(0, 4, (32,), generator=generator)
        losses = []
        for _ in range(steps):
            loss = self.compiled_step_fn(data.to(self.device), target.to(self.device))
            losses.append(loss.item())
        return losses


if __name__ == "__main__":
    trainer = Trainer()
    results = {"losses": trainer.train(8), "device": str(next(trainer.model.parameters()).device)}
    if results["device"].startswith("neuron"):
        from neuron_migrate.analyzers.emulator import compiled_graphs

        results["graphs"] = len(compiled_graphs())
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump(results, f)
