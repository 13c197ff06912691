"""A CPU emulator of the ``neuron`` device: run TorchNeuron programs where there is no Trainium.

``activate()`` turns the PyTorch of this process into one with a working ``"neuron"`` device whose tensors are
computed on the CPU, a ``torch.neuron`` device module, a ``"neuron"`` compile backend and process-group backend,
and a ``torch_neuronx`` module for the libraries that look for one. Results equal the same program on ``cpu``;
speed and op coverage are not the device's. ``neuron-migrate emulate`` runs a script with it; see docs/emulator.md.

Importing this package does not import torch; ``activate()`` does.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

BANNER = "neuron device emulated on CPU: results are correct, speed and op coverage are not the device's"
SHIM_DIR = Path(__file__).resolve().parent / "shim"

_active = {"on": False}


class RealDeviceAvailable(RuntimeError):
    """A real torch-neuronx is installed: the program should run on the device, not on the emulator."""


def is_active() -> bool:
    return _active["on"]


def real_torch_neuronx() -> str | None:
    """Where an installed torch-neuronx lives, or None (the emulator's own stand-in does not count)."""
    if str(SHIM_DIR) in sys.path:
        return None
    spec = importlib.util.find_spec("torch_neuronx")
    if spec is None:
        return None
    return spec.origin or "torch_neuronx"


def activate(*, banner: bool = True, strict_devices: bool = True) -> None:
    """Make ``"neuron"`` a device of this process. Idempotent; cannot be undone within the process.

    ``strict_devices=False`` lets ops mix neuron and CPU tensors (a real device raises).
    """
    from neuron_migrate.analyzers.emulator import tensor

    tensor._settings["strict"] = strict_devices
    if _active["on"]:
        return
    found = real_torch_neuronx()
    if found is not None:
        raise RealDeviceAvailable(f"torch-neuronx is installed ({found}): run on the neuron device, not the emulator")
    import torch

    if torch._C._get_privateuse1_backend_name() not in ("privateuseone", "neuron"):
        raise RuntimeError(
            f"the PrivateUse1 device of this PyTorch is already {torch._C._get_privateuse1_backend_name()!r}"
        )
    from neuron_migrate.analyzers.emulator import runtime

    runtime.install()
    # the libraries enable their neuron code paths when a module named torch_neuronx can be found
    sys.path.append(str(SHIM_DIR))
    _active["on"] = True
    if banner and os.environ.get("LOCAL_RANK", "0") == "0":
        print(BANNER, file=sys.stderr, flush=True)


NOTHING_PLACED = (
    "warning: no tensor was placed on neuron: the program ran on the CPU; check how it picks its device "
    "(a helper that falls back to the CPU for a name it does not know, a --device flag, an environment variable)"
)


def tensors_placed(*, reset: bool = False) -> bool:
    """Whether a tensor was put on the emulated device since ``activate()`` (or the last ``reset=True`` call,
    which starts a new count: one process may run several programs)."""
    from neuron_migrate.analyzers.emulator import tensor

    placed = bool(tensor._state["placed"])
    if reset:
        tensor._state["placed"] = False
    return placed


def compiled_graphs():
    """Every graph ``torch.compile(backend="neuron")`` received in this process (dynamo, forward, backward)."""
    from neuron_migrate.analyzers.emulator.compiler import GRAPHS

    return GRAPHS
