"""A legacy PyTorch/XLA loop over a small convolutional classifier with batch norm, on one synthetic batch
repeated (the fake-data mode of the MNIST-style examples). A convolution's bias right before a batch norm gets
a gradient that is rounding residue only: XLA's and the CPU's convolutions leave different residue there."""

import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.utils.utils as xu


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, kernel_size=5)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=5)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.bn1(self.conv1(x)), 2))
        x = F.relu(F.max_pool2d(self.bn2(self.conv2(x)), 2))
        return F.log_softmax(self.fc(torch.flatten(x, 1)), dim=1)


def main():
    device = xm.xla_device()
    torch.manual_seed(1)
    batch = (torch.randn(8, 1, 28, 28), torch.randint(0, 10, (8,)))
    loader = pl.MpDeviceLoader(xu.SampleGenerator(data=batch, sample_count=100), device)
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    model.train()
    for step, (data, target) in enumerate(loader):
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        xm.optimizer_step(optimizer)
        if step % 10 == 0:
            xm.master_print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
