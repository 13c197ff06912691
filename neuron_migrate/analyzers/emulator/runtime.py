"""Turn the PrivateUse1 slot of this process's PyTorch into the emulated ``neuron`` device."""

from __future__ import annotations

import sys

import torch

from neuron_migrate.analyzers.emulator import autocast, device_module
from neuron_migrate.analyzers.emulator import tensor as _tensor
from neuron_migrate.analyzers.emulator.tensor import NeuronTensor

_libraries = []


class _Hooks(torch._C._acc.PrivateUse1Hooks):
    def is_available(self) -> bool:
        return True

    def has_primary_context(self, dev_id) -> bool:
        return True

    def is_built(self) -> bool:
        return True


_PRIVATEUSE1 = torch._C._autograd.DeviceType.PrivateUse1


class _Guard(torch._C._acc.DeviceGuard):
    # asked for on every autograd node the engine records or runs (a few times per op in a backward pass)
    def type_(self):
        return _PRIVATEUSE1


def _payload(t):
    return t._payload if isinstance(t, NeuronTensor) else t


def _device_of(device):
    # one emulated core per process: see device_module.current_device
    return _tensor._state["device"]


# Factory kernels: calls such as torch.empty(..., device="neuron") carry no tensor, so they reach the PrivateUse1
# key instead of the wrapper's dispatch. Everything else decomposes into these plus ops on wrappers.
def _empty(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    payload = torch.empty(size, dtype=dtype, layout=layout, device="cpu", memory_format=memory_format)
    return NeuronTensor(payload, _device_of(device))


def _empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    payload = torch.empty_strided(size, stride, dtype=dtype, layout=layout, device="cpu")
    return NeuronTensor(payload, _device_of(device))


def _copy_from(self, dst, non_blocking=False):
    _payload(dst).copy_(_payload(self))
    return dst


def _copy_from_and_resize(self, dst):
    _payload(dst).resize_(self.shape).copy_(_payload(self))
    return dst


def _register_kernels() -> None:
    lib = torch.library.Library("aten", "IMPL")
    for name, fn in (
        ("empty.memory_format", _empty),
        ("empty_strided", _empty_strided),
        ("_copy_from", _copy_from),
        ("_copy_from_and_resize", _copy_from_and_resize),
    ):
        lib.impl(name, fn, "PrivateUse1")
    _libraries.append(lib)


class _GeneratorType(type(torch._C.Generator)):
    def __instancecheck__(cls, obj):
        return isinstance(obj, torch._C.Generator)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, torch._C.Generator)


class Generator(torch._C.Generator, metaclass=_GeneratorType):
    """``torch.Generator(device="neuron")``: a CPU generator, the one the payload ops draw from."""

    def __new__(cls, device="cpu"):
        return torch._C.Generator.__new__(cls, "cpu")

    def __init__(self, device="cpu"):
        pass


def _is_neuron(location) -> bool:
    if isinstance(location, str):
        return location.split(":")[0] == "neuron"
    return isinstance(location, torch.device) and location.type == "neuron"


def _patch_load() -> None:
    """``torch.load(map_location="neuron")``: load on the host, then move; storages cannot go to the device."""
    original = torch.load

    def load(f, map_location=None, *args, **kwargs):
        if not _is_neuron(map_location):
            return original(f, map_location, *args, **kwargs)
        loaded = original(f, "cpu", *args, **kwargs)
        return _move(loaded, torch.device(map_location))

    load.__doc__ = original.__doc__
    load.__wrapped__ = original
    torch.load = load


def _move(obj, device):
    if isinstance(obj, torch.Tensor):
        moved = obj.to(device)
        if isinstance(obj, torch.nn.Parameter):
            moved = torch.nn.Parameter(moved, requires_grad=obj.requires_grad)
        return moved
    if isinstance(obj, dict):
        return type(obj)((k, _move(v, device)) for k, v in obj.items()) if type(obj) is not dict else {
            k: _move(v, device) for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [_move(v, device) for v in obj]
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(_move(v, device) for v in obj)
    return obj


def _keep_dynamo_out() -> None:
    """The emulator's own Python code must never be compiled: code resumed after a graph break runs under
    dynamo's frame hook, which would otherwise try to trace the dispatch, the device guard and the kernels (and
    recompile them over and over). Each entry point PyTorch calls from C++ is marked "skip this frame and every
    frame it calls", which costs nothing per call (``torch._dynamo.disable`` costs several microseconds per op)."""
    from torch._C._dynamo.eval_frame import _FrameAction, _FrameExecStrategy, set_code_exec_strategy

    skip = _FrameExecStrategy(_FrameAction.SKIP, _FrameAction.SKIP)
    for function in _entry_points():
        set_code_exec_strategy(function.__code__, skip)


def _entry_points():
    yield NeuronTensor.__dict__["__torch_dispatch__"].__func__
    yield _Guard.type_
    yield from (_Hooks.is_available, _Hooks.has_primary_context, _Hooks.is_built)
    yield from (_empty, _empty_strided, _copy_from, _copy_from_and_resize, _pin_memory)
    yield from autocast.kernel_functions()


def _patch_accelerator_synchronize() -> None:
    """The Python device guard cannot synchronize; every emulated op has completed when it returns anyway."""
    original = torch.accelerator.synchronize

    def synchronize(device=None):
        if device is None or torch.device(device).type == "neuron":
            return device_module.synchronize(device)
        return original(device)

    torch.accelerator.synchronize = synchronize


def _pin_memory(self, device=None):
    return self.clone()


def _register_pinned_memory() -> None:
    """DataLoader(pin_memory=True), the Trainer's default, pins host batches for the accelerator. Python hooks
    cannot provide a pinned allocator in this PyTorch, and page-locked memory would buy nothing here: a copy in
    ordinary memory behaves the same for the program."""
    library = torch.library.Library("aten", "IMPL")
    library.impl("_pin_memory", _pin_memory, "CPU")
    _libraries.append(library)


def install() -> None:
    torch.utils.rename_privateuse1_backend("neuron")
    torch._register_device_module("neuron", device_module)
    torch._C._acc.register_python_privateuseone_hook(_Hooks())
    torch._C._acc.register_python_privateuseone_device_guard(_Guard())
    torch.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True, for_storage=False)
    _tensor._state["device"] = torch.device("neuron", 0)
    _register_kernels()
    _register_pinned_memory()
    autocast.install()
    torch.Generator = Generator
    _patch_load()
    _patch_accelerator_synchronize()
    _keep_dynamo_out()
    from neuron_migrate.analyzers.emulator import compiler, distributed

    compiler.install()
    distributed.install()
    sys.modules.setdefault("torch.neuron", device_module)
