"""``torch.neuron`` on the emulator: the device module PyTorch, transformers and accelerate query.

The emulated device draws random numbers from the CPU default generator, so a seeded program produces the same
values on ``neuron`` as on ``cpu``. Memory queries answer for what is real: tensors live in host memory, so the
device counters stay at zero and ``mem_get_info`` reports the host's memory.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import torch


DEVICE_NAME = "neuron (emulated on CPU)"
_index = {"current": 0}


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def _lazy_init() -> None:
    pass


def init() -> None:
    pass


def _is_in_bad_fork() -> bool:
    return False


def is_emulated() -> bool:
    return True


def device_count() -> int:
    # one emulated core per local process that torchrun started, like one NeuronCore per rank
    configured = os.environ.get("NEURON_EMULATOR_DEVICES") or os.environ.get("LOCAL_WORLD_SIZE") or "1"
    return max(1, int(configured))


def current_device() -> int:
    # Every process sees its core as index 0: PyTorch's autograd engine keeps one ready queue per index the
    # device guard reports, and a Python-defined device reports one. `set_device(local_rank)` is checked, then
    # the rank's tensors live on neuron:0.
    return 0


def _index_of(device) -> int:
    if device is None:
        return _index["current"]
    if isinstance(device, int):
        return device
    device = torch.device(device)
    return _index["current"] if device.index is None else device.index


def set_device(device) -> None:
    index = _index_of(device)
    if not 0 <= index < device_count():
        raise RuntimeError(f"neuron device {index} is not available (device_count() is {device_count()})")
    _index["current"] = index


def synchronize(device=None) -> None:
    """Every emulated op has finished when it returns."""


def get_device_name(device=None) -> str:
    return DEVICE_NAME


def get_device_capability(device=None):
    return (0, 0)


def get_device_properties(device=None):
    return SimpleNamespace(name=DEVICE_NAME, total_memory=_host_memory()[1], emulated=True)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True


def get_amp_supported_dtype():
    return [torch.bfloat16, torch.float16]


# --- random numbers: the CPU default generator ----------------------------------------------------------------


def manual_seed(seed: int) -> None:
    # torch.default_generator, not torch.manual_seed: that one calls back into manual_seed_all
    torch.default_generator.manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)


def seed() -> None:
    torch.default_generator.seed()


def seed_all() -> None:
    seed()


def initial_seed() -> int:
    return torch.default_generator.initial_seed()


def get_rng_state(device=None) -> torch.Tensor:
    return torch.default_generator.get_state()


def set_rng_state(state: torch.Tensor, device=None) -> None:
    torch.default_generator.set_state(state)


def get_rng_state_all():
    return [get_rng_state() for _ in range(device_count())]


def set_rng_state_all(states) -> None:
    for state in states:
        set_rng_state(state)


# --- memory: host memory, honestly reported -------------------------------------------------------------------


def _host_memory():
    """(available, total) bytes of host memory."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            fields = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in meminfo}
        return fields.get("MemAvailable", 0), fields.get("MemTotal", 0)
    except OSError:
        return 0, 0


def mem_get_info(device=None):
    return _host_memory()


def memory_allocated(device=None) -> int:
    return 0


def max_memory_allocated(device=None) -> int:
    return 0


def memory_reserved(device=None) -> int:
    return 0


def max_memory_reserved(device=None) -> int:
    return 0


def memory_stats(device=None) -> dict:
    return {"emulated": True, "allocated_bytes.all.current": 0}


def reset_peak_memory_stats(device=None) -> None:
    pass


def empty_cache() -> None:
    pass


class device:
    """``with torch.neuron.device(i):`` selects the current core for the block."""

    def __init__(self, index):
        self.index = _index_of(index)
        self.previous = None

    def __enter__(self):
        self.previous = current_device()
        set_device(self.index)

    def __exit__(self, *exc):
        set_device(self.previous)
        return False


class Stream:
    """Emulated ops run in order on the host; streams exist so code that names them runs."""

    def __init__(self, device=None, priority=0):
        self.device = torch.device("neuron", _index_of(device))

    def synchronize(self):
        pass

    def wait_stream(self, stream):
        pass

    def query(self):
        return True


class Event:
    def __init__(self, enable_timing=False, blocking=False):
        pass

    def record(self, stream=None):
        pass

    def synchronize(self):
        pass

    def query(self):
        return True


def current_stream(device=None) -> Stream:
    return Stream(device)


def default_stream(device=None) -> Stream:
    return Stream(device)
