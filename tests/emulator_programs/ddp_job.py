"""Data parallel training on the emulated device: two ranks train a small MLP over the "neuron" process group.

Run by ``neuron-migrate emulate --nproc 2 ddp_job.py OUT.json MODE``; MODE ``allreduce`` averages the gradients
with ``dist.all_reduce`` (what a migrated ``xm.optimizer_step`` loop does), ``ddp`` wraps the model in
DistributedDataParallel. Rank 0 writes the losses and final weights to OUT.json; every rank checks that the
collectives saw the other rank and that the ranks end with the same weights.
"""

import json
import os
import sys

import faulthandler
import torch
# a hung collective should fail the run, not the test's timeout
faulthandler.dump_traceback_later(60, exit=True)
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group(backend="neuron")
rank, world = dist.get_rank(), dist.get_world_size()
torch.neuron.set_device(int(os.environ["LOCAL_RANK"]))
device = torch.device("neuron")

summed = torch.tensor([float(rank + 1)], device=device)
dist.all_reduce(summed)
assert summed.item() == sum(range(1, world + 1)), summed
gathered = [torch.zeros(2, device=device) for _ in range(world)]
dist.all_gather(gathered, torch.full((2,), float(rank), device=device))
assert [g[0].item() for g in gathered] == list(map(float, range(world)))

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to(device)
MODE = sys.argv[2] if len(sys.argv) > 2 else "allreduce"
ddp = DDP(model) if MODE == "ddp" else model
optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
data = torch.randn(world * 4, 8, generator=torch.Generator().manual_seed(1))
target = data.sum(dim=1, keepdim=True)
losses = []
for _ in range(3):
    optimizer.zero_grad()
    shard = slice(rank * 4, rank * 4 + 4)
    loss = torch.nn.functional.mse_loss(ddp(data[shard].to(device)), target[shard].to(device))
    loss.backward()
    if MODE != "ddp":
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad.div_(world)
    optimizer.step()
    losses.append(loss.item())

weights = [p.detach().cpu() for p in model.parameters()]
for w in weights:
    other = w.clone()
    dist.broadcast(other, src=0)
    assert torch.equal(other, w), "ranks diverged"
if rank == 0:
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump({"losses": losses, "world": world, "weights": [w.flatten().tolist() for w in weights]}, f)
dist.destroy_process_group()
