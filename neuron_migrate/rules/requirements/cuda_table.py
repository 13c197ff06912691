"""The dependencies of a CUDA project that have no place, or no build, on Trainium (``rewrite --from cuda``).

Rows are (rule, action, why); the actions are those of :mod:`.common` (``keep-marked``: the requirement stays,
with a TODO naming the counterpart, because the code still imports the package until it is ported;
``remove``: nothing the code imports). The counterparts are the ones the Python rule NM640 names for the same
imports.
"""

from __future__ import annotations

KEEP_MARKED, REMOVE = "keep-marked", "remove"
_SDPA = "torch.nn.functional.scaled_dot_product_attention"
CUDA_PACKAGES: dict[str, tuple[str, str, str]] = {
    "bitsandbytes": (
        "NM657", KEEP_MARKED,
        "bitsandbytes quantizes with CUDA kernels: load the model in bf16 on the neuron device (LoRA instead of "
        "QLoRA), then drop this requirement",
    ),
    "flash-attn": (
        "NM657", KEEP_MARKED,
        f"flash-attn is a CUDA kernel: use {_SDPA} (attn_implementation='sdpa'), then drop this requirement",
    ),
    "xformers": ("NM657", KEEP_MARKED, f"xformers is CUDA-only: use {_SDPA}, then drop this requirement"),
    "apex": (
        "NM657", KEEP_MARKED,
        "apex is CUDA-only: torch.optim.AdamW, torch.nn.LayerNorm / RMSNorm and torch.autocast with bfloat16 "
        "replace it; then drop this requirement",
    ),
    "deepspeed": (
        "NM657", KEEP_MARKED,
        "DeepSpeed is CUDA-only: shard with FSDP2 (torch.distributed.fsdp.fully_shard) under torchrun, then drop "
        "this requirement",
    ),
    "triton": (
        "NM657", KEEP_MARKED,
        "Triton kernels compile for GPUs only: keep their PyTorch reference (torch.compile fuses it on the neuron "
        "backend) or write them in NKI, then drop this requirement",
    ),
    "cupy": ("NM657", KEEP_MARKED, "CuPy arrays live on NVIDIA GPUs: use torch tensors or NumPy instead"),
    "pynvml": (
        "NM657", KEEP_MARKED,
        "NVML sees NVIDIA GPUs only: count devices with torch.accelerator.device_count(), inspect them with "
        "neuron-ls / neuron-top",
    ),
    "nvidia-ml-py": (
        "NM657", KEEP_MARKED,
        "NVML sees NVIDIA GPUs only: count devices with torch.accelerator.device_count(), inspect them with "
        "neuron-ls / neuron-top",
    ),
}  # fmt: skip
# CuPy's wheels are named by their CUDA release (cupy-cuda12x); the nvidia-* wheels are the CUDA runtime that
# a CUDA build of torch pulls itself: nothing imports them, and no Trainium host needs them.
_RUNTIME = ("NM658", REMOVE, "a CUDA runtime wheel: a CUDA build of torch brought it, TorchNeuron needs none")
CUDA_PREFIXES: dict[str, tuple[str, str, str]] = {
    "cupy-cuda": CUDA_PACKAGES["cupy"],
    **{
        f"nvidia-{name}": _RUNTIME
        for name in ("cublas", "cuda-", "cudnn", "cufft", "cufile", "curand", "cusolver", "cusparse", "nccl",
                     "nvjitlink", "nvtx", "nvshmem")
    },
}  # fmt: skip
