"""Ops executed during the first steps of a run: data-dependent ops (by PyTorch's own op tags) and ops outside
PyTorch's namespaces (custom ops), each with the user line that ran it.

A ``TorchDispatchMode`` sees every op below autograd, also the ops a compiled graph runs (it asks to be left out of
the compilation itself: ``ignore_compile_internals``). It costs a Python call per op, so it runs for the first N
steps only: a step is one ``optimizer.step()``; in a run without an optimizer, one call of the outermost module.
"""

from __future__ import annotations

import gc
import os
import sys
import weakref
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode

from neuron_migrate.analyzers.runtime.lines import Attribution, Location, live_frames
from neuron_migrate.analyzers.runtime.twins import OP_TWINS, refine

# PyTorch's own namespaces: compute (aten, prims), profiler ranges, collectives, compiler internals
CORE_NAMESPACES = frozenset({
    "aten", "prim", "prims", "profiler", "c10d", "c10d_functional", "_c10d_functional",
    "_c10d_functional_autograd", "_dtensor", "debugprims", "rngprims", "higher_order", "inductor", "_inductor",
})
WATCHED_TAGS = frozenset({torch.Tag.dynamic_output_shape, torch.Tag.data_dependent_output})
# a forward pass per step is the usual count; gradient accumulation repeats it, but not without bound
FORWARDS_PER_STEP_LIMIT = 64
# torch files that only pass a user's call through (Tensor methods, torch.functional wrappers, op and custom-op
# call machinery, module __call__). A data-dependent op reached through any other torch file is PyTorch's own
# implementation (an optimizer reading its step count, a utility's check), not a construct in the user's code.
PASS_THROUGH = ("_tensor.py", "_tensor_str.py", "functional.py", "overrides.py", "_ops.py", "_jit_internal.py",
                "_library/", "utils/_python_dispatch.py", "_dynamo/", "nn/modules/module.py", "_compile.py")

_PLAIN = "plain"
_BOOL_INDEX = "bool-index"  # aten::index is data-dependent only with a boolean mask
_ONE_HOT = "one-hot"  # one_hot is data-dependent only without num_classes
_UNSEEN = object()


@dataclass
class OpHit:
    rule: str
    op: str
    user: Location | None
    origin: Location | None  # where the op was called from, when that is a library
    count: int = 0


class OpRecorder(TorchDispatchMode):
    def __init__(self, attribution: Attribution, *, device_run: bool = False) -> None:
        super().__init__()
        self.attribution = attribution
        # once the program has put something on the neuron device (real or emulated), a data-dependent op on a
        # CPU tensor is host-side work (data preparation, an optimizer's step count): it syncs nothing
        self.device_run = device_run
        self.device_seen = False
        self.ops = 0
        self.paused = False
        self.hits: dict[tuple, OpHit] = {}
        self.first_seen: dict[str, Location] = {}  # op name -> the user line that first ran it
        self._kinds: dict = {}

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        return True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not self.paused:
            self.ops += 1
            kind = self._kinds.get(func, _UNSEEN)
            if kind is _UNSEEN:
                kind = self._kinds[func] = self._classify(func)
            if kind is not _PLAIN:
                self._hit(func, kind, args, kwargs or {})
            if self.device_run and not self.device_seen:
                out = func(*args, **(kwargs or {}))
                self.device_seen = isinstance(out, torch.Tensor) and out.device.type != "cpu"
                return out
        return func(*args, **(kwargs or {}))

    def _classify(self, func) -> str:
        base = func._schema.name  # "aten::index" for aten::index.Tensor
        if base not in self.first_seen:
            user, _ = self.attribution.locate(live_frames(sys._getframe(2)))
            if user is not None:
                self.first_seen[base] = user
        if func.namespace not in CORE_NAMESPACES:
            return "NA505"
        if base == "aten::index":
            return _BOOL_INDEX
        if base == "aten::one_hot":
            return _ONE_HOT
        if base in OP_TWINS:
            return OP_TWINS[base]
        if WATCHED_TAGS.intersection(func.tags):
            return "NA504"
        return _PLAIN

    def _hit(self, func, kind: str, args, kwargs) -> None:
        if kind == _BOOL_INDEX:
            indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
            if not any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in indices or ()):
                return
            kind = "NA205"
        elif kind == _ONE_HOT:
            classes = args[1] if len(args) > 1 else kwargs.get("num_classes", -1)
            if classes != -1:
                return
            kind = "NA504"
        if kind != "NA505":
            first = next((a for a in args if isinstance(a, torch.Tensor)), None)
            if self.device_seen and first is not None and first.device.type == "cpu":
                return
        frames = list(live_frames(sys._getframe(2)))
        if kind != "NA505" and self._inside_torch(frames):
            return
        user, origin = self.attribution.locate(frames)
        rule = kind
        if rule not in ("NA504", "NA505"):
            # the static twin names the construct in the user's line; inside a library it is a plain NA504
            rule = refine(rule, user.text) if user is not None and origin == user else "NA504"
        name = func._schema.name
        key = (rule, name, user.filename if user else None, user.line if user else None)
        hit = self.hits.get(key)
        if hit is None:
            hit = self.hits[key] = OpHit(rule, name, user, origin if origin != user else None)
        hit.count += 1


    def _inside_torch(self, frames) -> bool:
        for filename, _ in frames:
            inside = self.attribution.torch_path(filename)
            if inside is None:
                if self.attribution.is_own(filename) or filename.startswith("<"):
                    continue
                return False
            if not inside.startswith(PASS_THROUGH):
                return True
        return False


class StepWindow:
    """Tells when the first ``steps`` steps are over, and calls ``on_done`` once then.

    Steps are counted with the global optimizer step hook. Without any optimizer, a step is a call of the outermost
    module (global module hooks, which keep out of compiled code: under torch.compile they return at once)."""

    def __init__(self, steps: int, on_done) -> None:
        self.steps = max(1, int(steps))
        self.on_done = on_done
        self.optimizer_steps = 0
        self.forwards = 0
        self.done = False
        self._depth = 0
        self._optimizer_exists: bool | None = None
        self._step_hook = None
        self._module_hooks: list = []

    def install(self) -> None:
        from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self._step_hook = register_optimizer_step_post_hook(self._after_step)
        self._module_hooks = [
            register_module_forward_pre_hook(self._before_forward),
            register_module_forward_hook(self._after_forward, always_call=True),
        ]

    @property
    def unit(self) -> str:
        if self.optimizer_steps:
            return "optimizer step" if self.optimizer_steps == 1 else "optimizer steps"
        if self.forwards:
            return "forward call" if self.recorded == 1 else "forward calls"
        return "steps"

    @property
    def recorded(self) -> int:
        return self.optimizer_steps if self.optimizer_steps else min(self.forwards, self.steps)

    def describe(self) -> str:
        """The stretch of the run the recorder covered, for messages."""
        if not self.done and not self.optimizer_steps and not self.forwards:
            return "during the run"
        return f"in the first {self.recorded} {self.unit}"

    def remove_step_hook(self) -> None:
        if self._step_hook is not None:
            self._step_hook.remove()
            self._step_hook = None

    def remove_module_hooks(self) -> None:
        for handle in self._module_hooks:
            handle.remove()
        self._module_hooks = []

    def _finish(self) -> None:
        if not self.done:
            self.done = True
            self.on_done()

    def _after_step(self, optimizer, args, kwargs) -> None:
        # An optimizer stepped inside a compiled function is traced with it: as with the forward hooks, the traced
        # hook must read nothing of ours. Such steps are not counted; the recorder then covers the whole run.
        if torch.compiler.is_compiling() or self.done:
            return
        self.optimizer_steps += 1
        if self.optimizer_steps >= self.steps:
            self._finish()

    # dynamo traces these hooks inside compiled modules: is_compiling() must come first, so that the traced
    # version reads no state of ours (reading it would add guards, and recompiles when it changes)
    def _before_forward(self, module, args) -> None:
        if torch.compiler.is_compiling() or self.done:
            return
        self._depth += 1
        if self._depth != 1:
            return
        self.forwards += 1
        if self.optimizer_steps == 0 and self.forwards > self.steps and not self._training() or self.forwards > self.steps * FORWARDS_PER_STEP_LIMIT:
            self._finish()

    def _after_forward(self, module, args, output) -> None:
        if torch.compiler.is_compiling() or self.done:
            return
        self._depth = max(0, self._depth - 1)

    def _training(self) -> bool:
        """Whether an optimizer exists (then a step ends at optimizer.step(), after backward). Checked once."""
        if self._optimizer_exists is None:
            # type() and not isinstance(): gc also holds weak proxies and deprecated module stand-ins
            optimizer = torch.optim.Optimizer
            self._optimizer_exists = any(issubclass(type(o), optimizer) for o in gc.get_objects())
        return self._optimizer_exists


_RECORDING: weakref.WeakSet[OpRecorder] = weakref.WeakSet()


def _leave_in_child() -> None:
    # a DataLoader worker forked while the recorder is on would keep it for its whole life; its records are lost
    # with the process anyway
    for mode in list(_RECORDING):
        pop_if_on_top(mode)


os.register_at_fork(after_in_child=_leave_in_child)


def start(mode: OpRecorder) -> None:
    mode.__enter__()
    _RECORDING.add(mode)


def pop_if_on_top(mode: OpRecorder) -> bool:
    """Leave the recorder if it is the innermost dispatch mode and no compiled function is running; otherwise
    pause it (it stays, doing nothing, until a later call can leave it)."""
    mode.paused = True
    if _get_current_dispatch_mode() is mode and not _inside_compiled_call():
        mode.__exit__(None, None, None)
        _RECORDING.discard(mode)
        return True
    return False


def _inside_compiled_call() -> bool:
    """Whether a torch.compile'd function is on the stack. Dynamo restores the dispatch-key state it found when
    such a call returns, so leaving the mode from inside it would leave PyTorch routing every op to a mode that
    is gone ("Hit Python dispatch key but no arguments had PyInterpreter")."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_filename.endswith(_EVAL_FRAME) and code.co_name == "compile_wrapper":
            return True
        frame = frame.f_back
    return False


_EVAL_FRAME = os.path.join("_dynamo", "eval_frame.py")
