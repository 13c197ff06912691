"""CUDA runtime calls a table answers: the device queries torch.accelerator has, and those about the GPU itself
(NM603), the seeds (NM604), the CUDA memory statistics (NM605) and the NVTX ranges (NM640)."""

from __future__ import annotations

from neuron_migrate.rules.rows import Manual, Rename, Row

# torch.cuda.X -> torch.accelerator.Y: the same call on a GPU, the neuron device's on Trainium
_ACCELERATOR = (
    ("is_available", "is_available"),
    ("device_count", "device_count"),
    ("set_device", "set_device_index"),
    ("current_device", "current_device_index"),
    ("synchronize", "synchronize"),
)
SEED_REVIEW = "torch.manual_seed seeds the CPU and every device; it also reseeds the CPU generator here"
RNG_STATE_STEP = ("the CUDA generator's state (there is none on the neuron device): save and restore the current "
                  "accelerator's with torch.get_device_module().get_rng_state() / set_rng_state() (torch.neuron's on "
                  "Trainium), or keep the CUDA call for GPU runs")
# CUDA memory statistics: torch.accelerator has the same names, but whether the neuron device's allocator
# answers them is not documented (a CPU stand-in of the device has no caching allocator and raises).
_MEMORY = (
    "empty_cache",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "memory_stats",
    "reset_peak_memory_stats",
    "reset_max_memory_allocated",
    "memory_summary",
    "mem_get_info",
)


BF16_CHECK = (
    "asked whether the CUDA GPU computes in bfloat16 (False without CUDA); it still asks the GPU where there is "
    "one, and answers yes on the neuron device, which computes in bfloat16"
)
GPU_PROPERTIES = (
    "describes the CUDA GPU and fails without CUDA: guard it with torch.cuda.is_available(), or read "
    "torch.accelerator.get_device_capability() where capabilities are what is asked"
)


STREAM_REVIEW = ("a CUDA stream or event made device-agnostic: on the current accelerator (the neuron device's on "
                 "Trainium); check the program's overlap of copies and compute where it relied on CUDA's ordering")
STREAM_CONTEXT = ("`with torch.cuda.stream(s):` runs on a CUDA stream: with `s` a torch.Stream (what torch.cuda.Stream "
                  "becomes), write `with s:`")
DEFAULT_STREAM = ("the CUDA default stream: torch.accelerator.current_stream() is the device's default stream outside "
                  "any `with stream:` block")


def memory_step(name: str) -> str:
    if name == "empty_cache":
        return "frees cached CUDA memory only (a no-op without CUDA): delete it, or keep it for GPU runs"
    return (f"torch.cuda.{name}() sees CUDA memory only (nothing on the neuron device): read the device's memory "
            "from torch.neuron.memory_stats(), or keep it for GPU runs")


ROWS = (
    *(Row(f"torch.cuda.{old}", "NM603", Rename(f"torch.accelerator.{new}", module="torch")) for old, new in _ACCELERATOR),
    *(Row(f"torch.cuda.{name}", "NM603", Manual(GPU_PROPERTIES))
      for name in ("get_device_properties", "get_device_name", "get_device_capability")),
    # streams and events: the device-agnostic classes make one on the current accelerator (torch.neuron has both)
    Row("torch.cuda.current_stream", "NM603", Rename("torch.accelerator.current_stream", module="torch",
                                                    review=STREAM_REVIEW)),
    Row("torch.cuda.Stream", "NM603", Rename("torch.Stream", module="torch", review=STREAM_REVIEW)),
    Row("torch.cuda.Event", "NM603", Rename("torch.Event", module="torch", review=STREAM_REVIEW)),
    Row("torch.cuda.stream", "NM603", Manual(STREAM_CONTEXT)),
    Row("torch.cuda.default_stream", "NM603", Manual(DEFAULT_STREAM)),
    Row("torch.cuda.manual_seed", "NM604", Rename("torch.manual_seed", module="torch", review=SEED_REVIEW)),
    Row("torch.cuda.manual_seed_all", "NM604", Rename("torch.manual_seed", module="torch", review=SEED_REVIEW)),
    *(Row(f"torch.cuda.{name}", "NM604", Manual(RNG_STATE_STEP)) for name in (
        "get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all")),
    *(Row(f"torch.cuda.{name}", "NM605", Manual(memory_step(name))) for name in _MEMORY),
    *(Row(f"torch.cuda.memory.{name}", "NM605", Manual(memory_step(name))) for name in _MEMORY),
)

NVTX_REVIEW = "an NVTX range made a profiler range: it shows in torch.profiler traces, not in Nsight"
NVTX_STEP = (
    "NVTX marks are for NVIDIA's Nsight: wrap the code in `with torch.profiler.record_function(name):` "
    "instead, which torch.profiler traces show on every device"
)
NVTX_ROWS = (
    Row("torch.cuda.nvtx.range", "NM640", Rename("torch.profiler.record_function", module="torch", review=NVTX_REVIEW)),
    *(Row(f"torch.cuda.nvtx.{name}", "NM640", Manual(NVTX_STEP)) for name in ("range_push", "range_pop", "mark",
                                                                               "range_start", "range_end")),
)
