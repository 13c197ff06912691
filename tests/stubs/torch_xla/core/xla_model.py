"""``torch_xla.core.xla_model`` mapped onto the CPU and torch.distributed (gloo)."""

import os

import torch
import torch.distributed as dist

REDUCE_SUM = "sum"
REDUCE_MAX = "max"
REDUCE_MIN = "min"

_OPS = {REDUCE_SUM: dist.ReduceOp.SUM, REDUCE_MAX: dist.ReduceOp.MAX, REDUCE_MIN: dist.ReduceOp.MIN}


def _distributed():
    return dist.is_available() and dist.is_initialized()


def xla_device(n=None):
    return torch.device("cpu")


def xla_device_hw(device):
    from torch_xla import runtime

    return runtime.device_type()


def get_ordinal():
    return dist.get_rank() if _distributed() else int(os.environ.get("RANK", "0"))


def get_local_ordinal():
    return int(os.environ.get("LOCAL_RANK", "0"))


def xrt_world_size():
    return dist.get_world_size() if _distributed() else int(os.environ.get("WORLD_SIZE", "1"))


def is_master_ordinal(local=True):
    return (get_local_ordinal() if local else get_ordinal()) == 0


def master_print(*args, fd=None, local=False, flush=False):
    if is_master_ordinal(local=local):
        print(*args, file=fd, flush=flush)


def mark_step(wait=False):
    pass


def wait_device_ops(devices=None):
    pass


def set_rng_state(seed, device=None):
    torch.manual_seed(seed)


def all_reduce(reduce_type, inputs, scale=1.0, groups=None, pin_layout=True):
    tensors = inputs if isinstance(inputs, list) else [inputs]
    for tensor in tensors:
        if _distributed():
            dist.all_reduce(tensor, op=_OPS[reduce_type])
        if scale != 1.0:
            tensor.mul_(scale)
    return inputs


def reduce_gradients(optimizer, groups=None, pin_layout=True):
    world_size = xrt_world_size()
    if world_size == 1:
        return
    grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    all_reduce(REDUCE_SUM, grads, scale=1.0 / world_size)


def optimizer_step(optimizer, barrier=False, optimizer_args={}, groups=None, pin_layout=True):
    reduce_gradients(optimizer, groups=groups)
    return optimizer.step(**optimizer_args)


def rendezvous(tag, payload=b"", replicas=[]):
    if _distributed():
        dist.barrier()
    return [payload]


def mesh_reduce(tag, data, reduce_fn):
    if not _distributed():
        return reduce_fn([data])
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, data)
    return reduce_fn(gathered)


def _to_cpu(data):
    if isinstance(data, torch.Tensor):
        return data.detach().cpu()
    if isinstance(data, dict):
        return {k: _to_cpu(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(_to_cpu(v) for v in data)
    return data


def save(data, file_or_path, master_only=True, global_master=False):
    should_write = not master_only or is_master_ordinal(local=not global_master)
    if should_write:
        torch.save(_to_cpu(data), file_or_path)
    rendezvous("torch_xla.core.xla_model.save")
