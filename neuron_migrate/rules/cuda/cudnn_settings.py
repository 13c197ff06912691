"""NM606: cuDNN and TF32 settings have no effect on the neuron device"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.cuda.common import DOCS_TORCH_NEURON, CudaRule

DOCS_BACKENDS = "https://docs.pytorch.org/docs/stable/backends.html"
_SETTINGS = (
    "torch.backends.cudnn.benchmark",
    "torch.backends.cudnn.deterministic",
    "torch.backends.cudnn.enabled",
    "torch.backends.cudnn.allow_tf32",
    "torch.backends.cuda.matmul.allow_tf32",
)
SETTING_NOTE = "a cuDNN / CUDA matmul setting: kept for GPU runs, it has no effect on the neuron device"


@register
class CudnnSettings(CudaRule):
    """``torch.backends.cudnn.benchmark`` / ``deterministic`` / ``allow_tf32`` and the CUDA matmul TF32 switch:
    plain flags that only CUDA kernels read. Setting them is harmless on the neuron device, and the script still
    runs on a GPU with them, so they are kept and the report says they do nothing there (no marker in the code)."""

    meta = RuleMeta(
        "NM606",
        "cuDNN and TF32 settings have no effect on the neuron device",
        safety=MANUAL,
        summary="cuDNN and TF32 switches are kept (harmless, and still used on a GPU); the report notes them.",
        docs=(DOCS_BACKENDS, DOCS_TORCH_NEURON),
        triggers=(b"cudnn", b"allow_tf32"),
        example=Example(
            before="import torch\n\ntorch.backends.cudnn.benchmark = True\n",
            after="import torch\n\ntorch.backends.cudnn.benchmark = True\n",
        ),
    )
    references = {name: "note_setting" for name in _SETTINGS}

    def note_setting(self, original: cst.CSTNode, updated: cst.CSTNode, qname: str):
        self.ctx.report(self.meta, original, SETTING_NOTE)
        return updated
