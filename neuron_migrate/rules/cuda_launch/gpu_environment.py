"""NM655: environment variables only the GPU stack reads"""

from __future__ import annotations

from neuron_migrate.migrate.shell import ShellScript
from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.cuda_launch.common import DOCS_RUNTIME_ENV, CudaShellRule
from neuron_migrate.rules.cuda_launch.visible_devices import OLD as VISIBLE_DEVICES

# name prefix -> what reads it (the first match wins, so longer prefixes come first)
READERS = (
    ("NCCL_", "NCCL, the GPU collectives library"),
    ("TORCH_CUDNN_", "cuDNN"),
    ("TORCH_CUDA_", "the CUDA build of PyTorch"),
    ("PYTORCH_CUDA_", "the CUDA caching allocator"),
    ("PYTORCH_NVML_", "the CUDA caching allocator"),
    ("CUDA_", "the CUDA runtime"),
    ("CUDNN_", "cuDNN"),
    ("NVIDIA_", "the NVIDIA container runtime"),
    ("CUBLAS_", "cuBLAS"),
)
STEP = (
    "{name} is only read by {reader}: it does nothing on the neuron device; delete it, or find the Neuron "
    "runtime setting (NEURON_RT_*) for what it tuned"
)


def reader_of(name: str) -> str | None:
    if name == VISIBLE_DEVICES:
        return None  # NM651
    return next((reader for prefix, reader in READERS if name.startswith(prefix)), None)


@register
class GpuEnvironment(CudaShellRule):
    """NCCL_*, CUDA_*, cuDNN and NVIDIA container variables: a TODO each; kept, as the GPU run still reads them."""

    meta = RuleMeta(
        "NM655",
        "GPU-only environment variables",
        safety=MANUAL,
        summary=(
            "Settings of variables that only the GPU stack reads (NCCL_*, CUDA_*, TORCH_CUDNN_*, "
            "PYTORCH_CUDA_ALLOC_CONF, NVIDIA_*) get a TODO: they do nothing on the neuron device, and what they "
            "tuned may have a NEURON_RT_* counterpart."
        ),
        docs=(DOCS_RUNTIME_ENV,),
        triggers=tuple(prefix.encode() for prefix, _ in READERS),
        kind="shell",
        example=Example(
            before="export NCCL_DEBUG=INFO\ntorchrun --nproc_per_node=auto train.py\n",
            after=(
                "# TODO(neuron-migrate NM655): "
                + STEP.format(name="NCCL_DEBUG", reader=READERS[0][1])
                + "\nexport NCCL_DEBUG=INFO\ntorchrun --nproc_per_node=auto train.py\n"
            ),
        ),
    )

    def check(self, script: ShellScript) -> None:
        ctx, meta = self.ctx, self.meta
        for setting in script.settings():
            reader = reader_of(setting.name)
            if reader is None or setting.unset:
                continue
            item, command = setting.item, setting.command
            span = (item.start, item.end)
            if ctx.suppressed(meta.id, span, (command.start, command.start + 1)):
                ctx.skip(meta, *span)
            else:
                ctx.manual(meta, *span, STEP.format(name=setting.name, reader=reader), command.start)
