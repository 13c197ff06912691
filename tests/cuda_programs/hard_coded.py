"""A CUDA program with no fallback: it needs a GPU."""

import torch

model = torch.nn.Linear(4, 2).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
