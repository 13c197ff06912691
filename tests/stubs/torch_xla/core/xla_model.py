"""``torch_xla.core.xla_model`` mapped onto the CPU and torch.distributed (gloo)."""

import contextlib
import os
import pickle
import sys
import time

import torch
import torch.distributed as dist

REDUCE_SUM = "sum"
REDUCE_MAX = "max"
REDUCE_MIN = "min"

_OPS = {REDUCE_SUM: dist.ReduceOp.SUM, REDUCE_MAX: dist.ReduceOp.MAX, REDUCE_MIN: dist.ReduceOp.MIN}


_REPLICAS = []


def _distributed():
    return _replica_group() is not None


def _replica_group():
    """The group collectives run in. PJRT ran them across every process of the job with no process group of
    the program's own, so when the program made none, a private gloo group of all ranks stands in for it."""
    if dist.is_available() and dist.is_initialized():
        return dist.group.WORLD
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size == 1:
        return None
    if not _REPLICAS:
        rank = int(os.environ["RANK"])
        port = int(os.environ["MASTER_PORT"]) + 1
        store = dist.TCPStore(os.environ["MASTER_ADDR"], port, size, is_master=rank == 0)
        _REPLICAS.extend([dist.ProcessGroupGloo(store, rank, size), store])
    return _REPLICAS[0]


def _all_reduce(tensor, op):
    group = _replica_group()
    if group is dist.group.WORLD:
        dist.all_reduce(tensor, op=op)
        return
    options = dist.AllreduceOptions()
    options.reduceOp = op
    group.allreduce([tensor], options).wait()


def xla_device(n=None):
    return torch.device("cpu")


def xla_device_hw(device):
    from torch_xla import runtime

    return runtime.device_type()


# get_ordinal and xrt_world_size left torch_xla in 2.5 (runtime.global_ordinal and runtime.world_size took
# over); the double keeps them because the legacy programs it runs were written against them.
def get_ordinal(defval=0):
    return dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0"))


def get_local_ordinal():
    return int(os.environ.get("LOCAL_RANK", "0"))


def xrt_world_size(defval=1):
    return dist.get_world_size() if dist.is_initialized() else int(os.environ.get("WORLD_SIZE", "1"))


def is_master_ordinal(local=True):
    return (get_local_ordinal() if local else get_ordinal()) == 0


def master_print(*args, fd=sys.stdout, local=False, flush=False):
    if is_master_ordinal(local=local):
        print(*args, file=fd, flush=flush)


def mark_step(wait=False):
    pass


def wait_device_ops(devices=None):
    pass


# XLA's device generator starts from seed 101, whatever torch.manual_seed says.
_RNG_SEED = [101]


def set_rng_state(seed, device=None):
    """XLA seeds a generator of the device's own, which torch.manual_seed never touches and the host never
    draws from. The double's device ops draw from the CPU generator, so that is what this seeds: masks and
    random tensors made on the device differ from XLA's (another bit generator), and CPU-side draws after
    this call (init, shuffling) follow the new seed, where under XLA they would not."""
    _RNG_SEED[0] = int(seed)
    torch.manual_seed(seed)


def get_rng_state(device=None):
    # XLA returns its running seed, which every random op advances; the double reports the seed last set.
    return _RNG_SEED[0]


@contextlib.contextmanager
def fork_rng(device=None, enabled=True):
    if not enabled:
        yield
        return
    seed, state = _RNG_SEED[0], torch.random.get_rng_state()
    try:
        yield
    finally:
        _RNG_SEED[0] = seed
        torch.random.set_rng_state(state)


def all_reduce(reduce_type, inputs, scale=1.0, groups=None, pin_layout=True):
    # As in torch_xla: one replica is a no-op (a copy of a single tensor, unscaled); a single tensor
    # gets a new reduced tensor, a list is reduced in place.
    single = isinstance(inputs, torch.Tensor)
    if not _distributed() and not _always_all_reduce():
        return inputs.clone() if single else inputs
    tensors = [inputs.clone()] if single else inputs
    for tensor in tensors:
        if _distributed():
            _all_reduce(tensor, _OPS[reduce_type])
        if scale != 1.0:
            tensor.mul_(scale)
    return tensors[0] if single else inputs


def _always_all_reduce():
    # XLA_ALWAYS_ALLREDUCE makes one replica run the reduction too: the result is then scaled.
    from torch_xla.utils import utils

    return utils.getenv_as("XLA_ALWAYS_ALLREDUCE", bool, False)


def all_gather(value, dim=0, groups=None, output=None, pin_layout=True):
    """torch_xla's all-reduce based gather: each rank pads its tensor into its own slot along ``dim``."""
    dim = dim + value.dim() if dim < 0 else dim
    size, ordinal, world = value.size(dim), get_ordinal(), xrt_world_size()
    padding = [0] * (2 * value.dim())
    slot = value.dim() - 1 - dim
    padding[2 * slot], padding[2 * slot + 1] = ordinal * size, (world - 1 - ordinal) * size
    return all_reduce(REDUCE_SUM, torch.nn.functional.pad(value, padding))


def collective_broadcast(tensors, root_ordinal=0, groups=None, pin_layout=True):
    # As in torch_xla: every replica but the root zeroes its tensors, then a sum leaves the root's values.
    with torch.no_grad():
        for tensor in tensors:
            tensor.mul_(1 if get_ordinal() == root_ordinal else 0)
    all_reduce(REDUCE_SUM, tensors)


def _fetch_gradients(optimizer):
    return [p.grad.data for group in optimizer.param_groups for p in group["params"] if p.grad is not None]


def reduce_gradients(optimizer, groups=None, pin_layout=True):
    world_size = xrt_world_size()
    if world_size == 1:
        return
    grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    all_reduce(REDUCE_SUM, grads, scale=1.0 / world_size)


def optimizer_step(optimizer, barrier=False, optimizer_args={}, groups=None, pin_layout=True):
    reduce_gradients(optimizer, groups=groups)
    loss = optimizer.step(**optimizer_args)
    if barrier:
        mark_step()
    return loss


def rendezvous(tag, payload=b"", replicas=[]):
    if _distributed():
        _all_reduce(torch.zeros(1), dist.ReduceOp.SUM)
    return [payload]


def mesh_reduce(tag, data, reduce_fn):
    group = _replica_group()
    if group is None:
        return reduce_fn([data])
    if group is dist.group.WORLD:
        gathered = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, data)
        return reduce_fn(gathered)
    store, size = _REPLICAS[1], int(os.environ["WORLD_SIZE"])
    _MESH_ROUNDS[tag] = _MESH_ROUNDS.get(tag, 0) + 1
    key = f"mesh/{tag}/{_MESH_ROUNDS[tag]}"
    store.set(f"{key}/{get_ordinal()}", pickle.dumps(_to_cpu(data)))
    return reduce_fn([pickle.loads(store.get(f"{key}/{rank}")) for rank in range(size)])


_MESH_ROUNDS = {}


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
    # No rendezvous: 2.9's save does not wait for the other ranks, so a master-only call cannot hang.
    if should_write:
        torch.save(_to_cpu(data), file_or_path)


class RateTracker:
    """Examples per second, smoothed between calls to ``rate()`` as the legacy helper did."""

    def __init__(self, smooth_factor=None):
        self._smooth_factor = float(os.environ.get("RATE_TRACKER_SMOOTHING", "0.4")) if smooth_factor is None else smooth_factor
        self._start_time = self._partial_time = time.time()
        self._partial_count = self._count = 0.0
        self._partial_rate = None

    def add(self, count):
        self._count += count

    def rate(self):
        now = time.time()
        delta = now - self._partial_time
        if delta <= 0:
            return 0.0
        current = self._count / delta
        if self._partial_rate is not None:
            current = (1 - self._smooth_factor) * current + self._smooth_factor * self._partial_rate
        self._partial_count += self._count
        self._count = 0.0
        self._partial_time, self._partial_rate = now, current
        return current

    def global_rate(self):
        delta = time.time() - self._start_time
        return (self._partial_count + self._count) / delta if delta > 0 else 0.0


def add_step_closure(closure, args=(), run_async=False):
    # A closure ran once the step's graph had executed; here every op has run already.
    closure(*args)


def broadcast_master_param(model):
    group = _replica_group()
    if group is None:
        return
    for param in [*model.parameters(), *model.buffers()]:
        data = param.data if get_ordinal() == 0 else torch.zeros_like(param.data)
        _all_reduce(data, dist.ReduceOp.SUM)
        param.data.copy_(data)
