"""The tensor type behind the emulated ``neuron`` device.

A ``NeuronTensor`` is a wrapper subclass: PyTorch sees a tensor on ``neuron:N`` with its own sizes, strides and
autograd state, while the numbers live in a plain CPU tensor, the payload. Every aten op that reaches the wrapper
is run on the payloads and the results are wrapped again, so autograd, optimizers and modules work unchanged.

The wrapper is *traceable* (``__tensor_flatten__``): dynamo and AOTAutograd see through it, which is what lets
``torch.compile`` capture graphs of neuron tensors.
"""

from __future__ import annotations

import copy

import torch

aten = torch.ops.aten

# The device every new wrapper reports; ``torch.neuron.set_device`` moves it.
_state = {"device": None, "placed": False}  # placed: a tensor was ever put on the device

# Ops that legitimately take tensors from two devices: copies, and indexing with host index tensors (CUDA allows
# both too). Every other op mixing a neuron tensor with a non-scalar CPU tensor fails as it would on hardware.
_MIXED_DEVICE_OK = {
    aten.copy_.default,
    aten._to_copy.default,
    aten._copy_from.default,
    aten._copy_from_and_resize.default,
    aten.index.Tensor,
    aten.index_put_.default,
    aten.index_put.default,
    aten._index_put_impl_.default,
    aten.set_.source_Tensor,
    aten.set_.source_Storage_storage_offset,
}

# In-place ops that may change the shape of the tensor they write (besides every op's ``out=`` arguments).
_RESIZING = frozenset({"aten::resize_", "aten::resize_as_"})

# Argument types (as the op's schema prints them) whose values reach the CPU op unchanged: sizes, dims, flags,
# numbers, dtypes, layouts and memory formats. Tensors, tensor lists and devices are unwrapped; so is any other
# type, to be safe.
_PLAIN_TYPES = frozenset(
    {"int", "List[int]", "bool", "List[bool]", "float", "List[float]", "number", "str"}
    | {f"Optional[{t}]" for t in ("int", "List[int]", "bool", "float", "List[float]", "number", "str")}
)


class _Plan:
    """What the dispatch needs to know about one op, worked out at its first call."""

    __slots__ = ("func", "run", "special", "returns_inputs", "plain", "plain_names", "mixed_ok", "written")

    def __init__(self, func):
        schema = func._schema
        self.func = func
        self.run = func._op  # OpOverload.__call__ without its Python frame
        self.special = _SPECIAL.get(func)
        # does it hand back (some of) its inputs, so outputs must map back to the input wrappers?
        self.returns_inputs = schema.is_mutable or func.namespace == "c10d" or any(
            r.alias_info is not None for r in schema.returns
        )
        # per positional argument: does it pass unchanged? (positional arguments come first in a schema)
        self.plain = tuple(str(a.type) in _PLAIN_TYPES for a in schema.arguments if not a.kwarg_only)
        self.plain_names = frozenset(a.name for a in schema.arguments if str(a.type) in _PLAIN_TYPES)
        self.mixed_ok = func in _MIXED_DEVICE_OK
        # tensor arguments the op may resize (``out=``, ``self`` of ``resize_``): by position, or by name when
        # keyword-only. Their payloads may come back with other sizes than their wrappers report; a plain
        # in-place op (``add_``) keeps its shape, so it pays nothing for this.
        self.written = tuple(
            a.name if a.kwarg_only else i
            for i, a in enumerate(schema.arguments)
            if a.alias_info is not None
            and a.alias_info.is_write
            and str(a.type).startswith("Tensor")
            and (a.kwarg_only or schema.name in _RESIZING)
        )


# keyed by id(): an OpOverload hashes in Python, which would cost more than the lookup itself
_plans: dict = {}


def current_device() -> torch.device:
    return _state["device"]


def _plan_of(func) -> _Plan:
    plan = _plans.get(id(func))
    if plan is None or plan.func is not func:
        plan = _plans[id(func)] = _Plan(func)
    return plan


def _device_error(func) -> RuntimeError:
    return RuntimeError(
        f"Expected all tensors to be on the same device, but found at least two devices, {_state['device']} and cpu! "
        f"(when running {func.name()} on the emulated neuron device)"
    )


class NeuronTensor(torch.Tensor):
    """A tensor on the emulated neuron device; ``_payload`` is the CPU tensor holding its values."""

    _payload: torch.Tensor

    @staticmethod
    def __new__(cls, payload: torch.Tensor, device: torch.device | None = None):
        return _new_wrapper(payload, device or _state["device"], cls)

    __torch_function__ = torch._C._disabled_torch_function_impl

    def __tensor_flatten__(self):
        return ["_payload"], None

    @staticmethod
    def __tensor_unflatten__(inner, meta, outer_size, outer_stride):
        return NeuronTensor(inner["_payload"])

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return _dispatch(func, args, kwargs)

    # --- Python-level behaviour a wrapper would otherwise get wrong -------------------------------------------

    def __repr__(self, *, tensor_contents=None):
        text = repr(self._payload)
        head, _, tail = text.rpartition(")")
        extra = f", device='{self.device}'"
        if self.grad_fn is not None:
            extra += f", grad_fn=<{type(self.grad_fn).__name__}>"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        head = head.replace(", requires_grad=True", "")
        head = head.split(", grad_fn=")[0]
        return head + extra + ")" + tail

    def __format__(self, format_spec):
        # Tensor.__format__ prints a 0-d tensor as its number only for the exact Tensor type; a device tensor is
        # one, so f"{loss}" and f"{loss:.4f}" must read the same here as on Trainium (and on CUDA or the CPU).
        if self.dim() == 0:
            return self.detach()._payload.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def tolist(self):
        return self._payload.tolist()

    def numpy(self, *, force=False):
        raise TypeError(
            f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
            "memory first."
        )

    def __reduce_ex__(self, protocol):
        # pickled (torch.save, multiprocessing) as the host tensor it holds, as a real device saves after a copy
        return self._payload.detach().__reduce_ex__(protocol)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        clone = NeuronTensor(copy.deepcopy(self._payload.detach(), memo), self.device)
        if self.requires_grad:
            clone.requires_grad_(True)
        if getattr(self, "_is_param", False):
            clone._is_param = True
        if self.grad is not None:
            clone.grad = copy.deepcopy(self.grad, memo)
        memo[id(self)] = clone
        return clone

    def _tracing(self) -> bool:
        return torch.compiler.is_compiling() or isinstance(self._payload, torch._subclasses.FakeTensor)

    def untyped_storage(self):
        # safetensors and transformers compare storages to find tied weights: answer with the payload's
        if self._tracing():
            return super().untyped_storage()
        return self._payload.untyped_storage()

    def data_ptr(self):
        if self._tracing():
            return super().data_ptr()
        return self._payload.data_ptr()

    @property
    def data(self):
        return torch.Tensor.data.__get__(self)

    @data.setter
    def data(self, value):
        # `param.data = t` swaps the C++ metadata only; the payload must follow or the old values stay in use
        torch.Tensor.data.__set__(self, value)
        if isinstance(value, NeuronTensor):
            self._payload = value._payload
        else:
            self._payload = value


def _relabel_fake(t):
    """A fake tensor made for device neuron by a tracer's factory call becomes a CPU fake, like payloads are."""
    from torch._subclasses.fake_tensor import FakeTensor

    if isinstance(t, FakeTensor) and t.fake_device.type != "cpu":
        with t.fake_mode:
            return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="cpu")
    return t


_CPU = torch.device("cpu")
_settings = {"strict": True}
_STRIDED = torch.strided
_make_wrapper = torch.Tensor._make_wrapper_subclass


def _new_wrapper(payload, device, cls=None):
    """The wrapper of ``payload``: its sizes, strides, storage offset and dtype, reported on ``device``."""
    cls = cls or NeuronTensor
    size = payload.size()
    if (
        payload.layout is _STRIDED
        and not payload.storage_offset()
        and payload.is_contiguous()
        and 1 not in size
        and 0 not in size
    ):
        # the commonest result: the wrapper's default strides are the payload's, one list less to parse (a dim
        # of size 1 or 0 may have any stride and still count as contiguous, so those tensors pass their strides)
        wrapper = _make_wrapper(cls, size, dtype=payload.dtype, device=device)
    else:
        wrapper = _make_wrapper(
            cls, size, strides=payload.stride(), storage_offset=payload.storage_offset(), dtype=payload.dtype,
            layout=payload.layout, device=device,
        )
    wrapper._payload = payload
    _state["placed"] = True
    return wrapper


def _unwrap(x, func):
    t = type(x)
    if t is NeuronTensor:
        return x._payload
    if t is list or t is tuple:
        return t([_unwrap(v, func) for v in x])
    if t is torch.Tensor and x.is_cpu:  # a host tensor, most often a number the op wrapped (x * 2.0)
        if x.dim() > 0 and _settings["strict"] and not _plan_of(func).mixed_ok:
            raise _device_error(func)
        return x
    if isinstance(x, torch.Tensor):
        if isinstance(x, NeuronTensor):
            return x._payload
        dev = x.device.type
        if dev == "cpu":
            if x.dim() > 0 and _settings["strict"] and not _plan_of(func).mixed_ok:
                raise _device_error(func)
            return x
        if dev == _state["device"].type:
            return _relabel_fake(x)
        return x
    if t is torch.device and x.type == _state["device"].type:
        return _CPU
    return x


def _wrap(x, originals):
    if isinstance(x, torch.Tensor):
        if originals is not None:
            original = originals.get(id(x))
            if original is not None:
                return original
        return _new_wrapper(x, _state["device"])
    t = type(x)
    if t is list or t is tuple:
        return t([_wrap(v, originals) for v in x])
    return x


def _dispatch(func, args, kwargs):
    plan = _plans.get(id(func))
    if plan is None or plan.func is not func:
        plan = _plan_of(func)
    if plan.special is not None:
        return plan.special(func, args, kwargs or {})
    # arguments the schema types as sizes, flags or numbers pass as they are; wrappers give their payloads
    plain = plan.plain
    if len(args) > len(plain):  # never from the dispatcher; a direct call must not lose arguments to zip()
        plain = plain + (False,) * (len(args) - len(plain))
    cpu_args = [
        a if passes else a._payload if type(a) is NeuronTensor else _unwrap(a, func) for a, passes in zip(args, plain)
    ]
    if kwargs:
        names = plan.plain_names
        cpu_kwargs = {k: v if k in names else _unwrap(v, func) for k, v in kwargs.items()}
        out = plan.run(*cpu_args, **cpu_kwargs)
    else:
        cpu_kwargs = None
        out = plan.run(*cpu_args)
    if plan.written:
        _follow_resizes(plan.written, args, kwargs)
    if not plan.returns_inputs:
        if type(out) is torch.Tensor:  # the commonest result: one new tensor
            return _new_wrapper(out, _state["device"])
        return _wrap(out, None)
    if type(out) is torch.Tensor and not kwargs:  # in-place ops and views: one tensor from flat arguments
        original = _handed_back(out, args, cpu_args, plain)
        if original is not False:
            return original if original is not None else _new_wrapper(out, _state["device"])
    originals = {}
    _collect(args, cpu_args, originals)
    if kwargs:
        for key, value in kwargs.items():
            _collect((value,), (cpu_kwargs[key],), originals)
    return _wrap(out, originals)


def _follow_resizes(written, args, kwargs):
    """An op that resizes a tensor it writes (``torch.arange(n, device=...)`` fills an empty ``out=``,
    ``x.resize_(n)``) changed the payload only: the wrapper takes the payload's new sizes and strides, keeping
    its identity, autograd state and version counter (``.data =`` is a shallow copy of the metadata)."""
    for where in written:
        if type(where) is int:
            wrapper = args[where] if where < len(args) else None
        else:
            wrapper = kwargs.get(where) if kwargs else None
        if type(wrapper) is not NeuronTensor:
            continue
        payload = wrapper._payload
        if wrapper.shape != payload.shape or wrapper.stride() != payload.stride():
            wrapper.data = _new_wrapper(payload, wrapper.device)


def _handed_back(out, args, cpu_args, plain):
    """The wrapper whose payload ``out`` is (an in-place op), None when ``out`` is new (a view), or False when a
    tensor list among the arguments leaves it to the general mapping."""
    for wrapped, unwrapped, passed in zip(args, cpu_args, plain):
        if unwrapped is out:
            return wrapped if type(wrapped) is NeuronTensor else False
        if not passed and (type(wrapped) is list or type(wrapped) is tuple):
            return False
    return None


def _collect(wrapped, unwrapped, into):
    for w, u in zip(wrapped, unwrapped):
        if isinstance(w, NeuronTensor):
            into[id(u)] = w
        elif type(w) in (list, tuple):
            _collect(w, u, into)


def _to_copy(func, args, kwargs):
    """``.to(...)``: to the host gives a plain CPU tensor; anything else stays on the neuron device."""
    (self,) = args
    device = kwargs.get("device")
    source = self._payload if isinstance(self, NeuronTensor) else self
    target = torch.device(device) if device is not None else self.device
    cpu_kwargs = dict(kwargs)
    cpu_kwargs["device"] = _CPU
    if target.type == "cpu":
        return func(source, **cpu_kwargs)
    return _new_wrapper(func(source, **cpu_kwargs), _state["device"])


def _scalar(func, args, kwargs):
    return func(args[0]._payload)


def _record_stream(func, args, kwargs):
    """``tensor.record_stream(stream)`` (DDP's input scatter calls it): a hint that keeps memory alive until a
    stream is done with it; the emulated device runs in order on the host, so there is nothing to keep."""
    return None


_SPECIAL = {
    aten._to_copy.default: _to_copy,
    aten._local_scalar_dense.default: _scalar,
    aten.record_stream.default: _record_stream,
}
