"""NM640: CUDA-only libraries and tools need a neuron counterpart"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.cuda.common import DOCS_NKI, DOCS_TORCH_NEURON, CudaRule
from neuron_migrate.rules.tables.cuda import NVTX_ROWS

SDPA = "torch.nn.functional.scaled_dot_product_attention"
# a CUDA-only package (by its top-level name, or a dotted module) -> the next step on the neuron device
LIBRARIES = {
    "flash_attn": (
        f"flash-attn is a CUDA kernel: call {SDPA}(q, k, v, is_causal=...) with (batch, heads, seq, dim) "
        "tensors (flash_attn_func takes (batch, seq, heads, dim): transpose(1, 2) around it), or a Hub kernel "
        "with a neuron build"
    ),
    "xformers": (
        f"xformers is CUDA-only: memory_efficient_attention(q, k, v, attn_bias) is {SDPA} on tensors transposed "
        "from (batch, seq, heads, dim) to (batch, heads, seq, dim), with the bias as attn_mask (or "
        "is_causal=True for a LowerTriangularMask)"
    ),
    "apex": (
        "apex is CUDA-only: FusedAdam -> torch.optim.AdamW, FusedLayerNorm -> torch.nn.LayerNorm, "
        "FusedRMSNorm -> torch.nn.RMSNorm, apex.amp -> torch.autocast with bfloat16, apex DDP -> "
        "torch.nn.parallel.DistributedDataParallel"
    ),
    "triton": (
        "Triton kernels compile for GPUs only: keep the PyTorch reference of the kernel (torch.compile fuses it "
        "on the neuron backend), or write it as an NKI kernel"
    ),
    "deepspeed": (
        "DeepSpeed is CUDA-only: shard with FSDP2 (torch.distributed.fsdp.fully_shard) under torchrun; its "
        "flops profiler -> torch.utils.flop_counter.FlopCounterMode"
    ),
    "pynvml": "NVML sees NVIDIA GPUs only: on Trainium read the devices with neuron-ls / neuron-top, or count them "
              "with torch.accelerator.device_count()",
    "torch.utils.cpp_extension": (
        "a C++/CUDA extension builds for the GPU: run its PyTorch reference on the neuron device, or write the "
        "kernel in NKI (a CPU-only extension still works on tensors moved to the CPU)"
    ),
}
NVIDIA_SMI = (
    "nvidia-smi sees NVIDIA GPUs only: on Trainium use neuron-ls (devices) and neuron-top (use), or "
    "torch.accelerator.device_count()"
)


def _library(module: str) -> str | None:
    for name in LIBRARIES:
        if module == name or module.startswith(name + "."):
            return name
    return None


def _dotted(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


@register
class CudaOnlyLibraries(CudaRule):
    """Imports of CUDA-only packages (flash-attn, xformers, apex, Triton, DeepSpeed, NVML,
    ``torch.utils.cpp_extension``): one TODO on the import with the neuron counterpart of what the package is
    used for (SDPA, the torch.optim / torch.nn twins of apex's fused layers, NKI, FSDP2). Nothing is rewritten:
    flash-attn and xformers take (batch, seq, heads, dim) where SDPA takes (batch, heads, seq, dim), so a
    call-for-call swap is wrong unless the layout is moved too. ``torch.cuda.nvtx.range`` ->
    ``torch.profiler.record_function`` (a named range in the profiler's trace); ``range_push`` / ``range_pop``
    get a TODO. A ``nvidia-smi`` command run from Python gets a TODO."""

    meta = RuleMeta(
        "NM640",
        "CUDA-only libraries and tools need a neuron counterpart",
        safety=MANUAL,
        risks=frozenset({"performance"}),
        summary="flash-attn, xformers, apex, Triton, DeepSpeed, NVML, C++/CUDA extensions and nvidia-smi get a "
                "TODO naming their neuron counterpart; NVTX ranges become profiler ranges.",
        docs=(DOCS_TORCH_NEURON, DOCS_NKI),
        triggers=(b"flash_attn", b"xformers", b"apex", b"triton", b"deepspeed", b"pynvml", b"cpp_extension",
                  b"nvtx", b"nvidia-smi"),
        example=Example(
            before="from flash_attn import flash_attn_func\n",
            after=f"# TODO(neuron-migrate NM640): {LIBRARIES['flash_attn']}\nfrom flash_attn import flash_attn_func\n",
        ),
    )
    rows = NVTX_ROWS

    def leave_Import(self, original: cst.Import, updated: cst.Import):
        for alias in original.names:
            name = _library(_dotted(alias.name))
            if name is not None:
                self.ctx.manual(self.meta, original, LIBRARIES[name])
                break
        return updated

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom):
        if original.relative or original.module is None:
            return updated
        module = _dotted(original.module)
        names = [] if isinstance(original.names, cst.ImportStar) else [_dotted(a.name) for a in original.names]
        found = _library(module) or next((n for n in (_library(f"{module}.{x}") for x in names) if n), None)
        if found is not None:
            self.ctx.manual(self.meta, original, LIBRARIES[found])
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        """``subprocess.run(["nvidia-smi", ...])``, ``os.system("nvidia-smi")``: a command that names it."""
        for arg in original.args:
            value = arg.value
            elements = value.elements if isinstance(value, (cst.List, cst.Tuple)) else ()
            texts = [value, *(e.value for e in elements)]
            if any(isinstance(t, cst.SimpleString) and "nvidia-smi" in str(t.evaluated_value) for t in texts):
                self.ctx.manual(self.meta, original, NVIDIA_SMI)
                break
        return updated
