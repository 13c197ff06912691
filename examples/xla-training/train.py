"""Train a small MLP classifier on synthetic data with PyTorch/XLA on Trainium (trn1).

Launch with ``run.sh`` (torchrun, one process per NeuronCore) or plain ``python train.py``, which
starts one worker per NeuronCore itself through ``xmp.spawn``.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_backend  # registers the "xla" process-group backend
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr

from utils import log_rank0, print_compile_stats, reduce_accuracy, seed_everything, wait_for_all


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Synthetic MLP training on NeuronCores")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32, help="per NeuronCore")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--num-samples", type=int, default=8192)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--log-every", type=int, default=50)
    parser.add_argument("--output-dir", default="checkpoints")
    parser.add_argument("--bf16", action="store_true", help="autocast the forward pass to bfloat16")
    parser.add_argument("--compile-eval", action="store_true", help="evaluate through torch.compile")
    parser.add_argument("--metrics", action="store_true", help="print the XLA metrics report at the end")
    return parser.parse_args(argv)


def make_dataset(num_samples, features, classes, seed):
    """One Gaussian blob per class: learnable in an epoch or two and nothing to download."""
    # the class centers define the task, so they are the same for every split
    centers = torch.randn(classes, features, generator=torch.Generator().manual_seed(0)) * 2.0
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, classes, (num_samples,), generator=generator)
    inputs = centers[labels] + torch.randn(num_samples, features, generator=generator)
    return TensorDataset(inputs, labels)


class MLP(nn.Module):
    def __init__(self, features, classes, hidden=256):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(features, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, classes),
        )

    def forward(self, x):
        return self.layers(x)


def build_loader(dataset, batch_size, train):
    sampler = DistributedSampler(dataset, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=train)
    # drop_last keeps every batch the same shape, so the step graph compiles once.
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler, drop_last=True)


def train_one_epoch(model, loader, optimizer, epoch, flags):
    model.train()
    started = time.time()
    for step, (inputs, labels) in enumerate(loader):
        optimizer.zero_grad()
        with torch.autocast("xla", dtype=torch.bfloat16, enabled=flags.bf16):
            loss = F.cross_entropy(model(inputs), labels)
        loss.backward()
        # all-reduces the gradients over every NeuronCore, then steps
        xm.optimizer_step(optimizer)
        if step % flags.log_every == 0:
            xm.master_print(f"epoch {epoch} step {step} loss {loss.detach().to('cpu').item():.4f}")
    xm.mark_step()
    log_rank0(f"epoch {epoch} took {time.time() - started:.1f}s")


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct = torch.zeros((), dtype=torch.long, device=device)
    seen = torch.zeros((), dtype=torch.long, device=device)
    for inputs, labels in loader:
        correct += (model(inputs).argmax(dim=-1) == labels).sum()
        seen += labels.numel()
    xm.mark_step()
    return reduce_accuracy(correct.item(), seen.item())


def save_checkpoint(model, optimizer, epoch, output_dir):
    if xm.is_master_ordinal():
        os.makedirs(output_dir, exist_ok=True)
    wait_for_all("checkpoint-dir")
    state = {"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict()}
    # xm.save moves the tensors to the CPU and writes from the master ordinal only
    xm.save(state, os.path.join(output_dir, f"epoch-{epoch}.pt"))


def _mp_fn(index, flags):
    dist.init_process_group("xla")
    seed_everything(1234)
    device = xm.xla_device()
    world_size = xr.world_size()
    log_rank0(f"{world_size} workers, device {device}, worker {index}")

    train_data = make_dataset(flags.num_samples, flags.features, flags.classes, seed=1)
    eval_data = make_dataset(flags.num_samples // 4, flags.features, flags.classes, seed=2)
    train_loader = build_loader(train_data, flags.batch_size, train=True)
    eval_loader = build_loader(eval_data, flags.batch_size, train=False)
    train_device_loader = pl.MpDeviceLoader(train_loader, device)
    eval_device_loader = pl.MpDeviceLoader(eval_loader, device)

    model = MLP(flags.features, flags.classes).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=flags.lr * world_size)
    eval_model = torch.compile(model, backend="openxla") if flags.compile_eval else model

    for epoch in range(1, flags.epochs + 1):
        train_loader.sampler.set_epoch(epoch)
        train_one_epoch(model, train_device_loader, optimizer, epoch, flags)
        accuracy = evaluate(eval_model, eval_device_loader, device)
        log_rank0(f"epoch {epoch} eval accuracy {accuracy:.2%}")
        save_checkpoint(model, optimizer, epoch, flags.output_dir)

    if flags.metrics:
        print_compile_stats()
    wait_for_all("done")


if __name__ == "__main__":
    flags = parse_args()
    if "LOCAL_RANK" in os.environ:
        # torchrun already started one process per NeuronCore
        _mp_fn(int(os.environ["LOCAL_RANK"]), flags)
    else:
        xmp.spawn(_mp_fn, args=(flags,))
