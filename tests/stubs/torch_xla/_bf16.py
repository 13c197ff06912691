"""XLA_USE_BF16 and XLA_DOWNCAST_BF16, which torch_xla 2.9 still honours (torch_xla/csrc/dtype.cpp).

With either set, XLA stores and computes float32 as bfloat16 while tensors still report float32 and come
back to the host as float32; XLA_USE_BF16 also stores float64 as bfloat16, XLA_DOWNCAST_BF16 stores it
as float32. Here every op's floating-point result is rounded to that precision instead. The double cannot
tell host tensors from device ones, so CPU-side preprocessing is rounded too (real XLA rounds it once, on
transfer), and XLA's fusions may keep some intermediates in float32 where this rounds after every op.
"""

import os

import torch
from torch.utils._python_dispatch import TorchDispatchMode


def env_bool(name):
    # As torch_xla's GetEnvBool: "true"/"false", else an integer that is true when non-zero.
    value = os.environ.get(name)
    if value is None or value == "false":
        return False
    if value == "true":
        return True
    try:
        return int(value) != 0
    except ValueError:
        return False


def storage_types():
    """The dtype each floating dtype is held in on the device, or None when nothing is downcast."""
    if env_bool("XLA_USE_BF16"):
        return {torch.float32: torch.bfloat16, torch.float64: torch.bfloat16}
    if env_bool("XLA_DOWNCAST_BF16"):
        return {torch.float32: torch.bfloat16, torch.float64: torch.float32}
    return None


def _round(tensor, storage):
    narrow = storage.get(tensor.dtype) if isinstance(tensor, torch.Tensor) else None
    if narrow is not None and tensor.numel():
        tensor.copy_(tensor.to(narrow))


def _written_arguments(func, args, kwargs):
    """The tensors an in-place or out= op wrote to."""
    for position, argument in enumerate(func._schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        value = kwargs.get(argument.name) if argument.kwarg_only or position >= len(args) else args[position]
        yield from value if isinstance(value, (list, tuple)) else [value]


def _fresh_results(func, out):
    """The results that are new tensors, not views of an argument (those hold rounded values already)."""
    results = out if isinstance(out, (list, tuple)) else [out]
    for ret, value in zip(func._schema.returns, results):
        if ret.alias_info is None:
            yield from value if isinstance(value, (list, tuple)) else [value]


class DeviceStorageMode(TorchDispatchMode):
    def __init__(self, storage):
        super().__init__()
        self.storage = storage

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        with torch.no_grad():
            for tensor in [*_written_arguments(func, args, kwargs), *_fresh_results(func, out)]:
                _round(tensor, self.storage)
        return out


_ACTIVE = []


def install():
    """Rounds every op's result for the rest of the process, as the flags held for all of a torch_xla run."""
    storage = storage_types()
    if storage is None or _ACTIVE:
        return
    mode = DeviceStorageMode(storage)
    mode.__enter__()
    _ACTIVE.append(mode)
