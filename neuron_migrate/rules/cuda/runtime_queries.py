"""NM603: torch.cuda device queries -> torch.accelerator"""

from __future__ import annotations

from neuron_migrate.rules.base import SAFE, Example, RuleMeta, register
from neuron_migrate.rules.cuda.common import DOCS_ACCELERATOR, DOCS_TORCH_NEURON, CudaRule
from neuron_migrate.rules.tables.cuda import ROWS


@register
class RuntimeQueries(CudaRule):
    """``torch.cuda.is_available`` / ``device_count`` / ``set_device`` / ``current_device`` / ``synchronize`` ->
    their ``torch.accelerator`` twins (DOCS_ACCELERATOR), which answer for the GPU on a GPU and for the neuron
    device on Trainium. The questions about the GPU itself (``is_bf16_supported``, ``get_device_properties``)
    have no twin of the same meaning: they get a TODO."""

    meta = RuleMeta(
        "NM603",
        "torch.cuda device queries -> torch.accelerator",
        safety=SAFE,
        summary="The CUDA device queries become the device-agnostic torch.accelerator calls of the same meaning.",
        docs=(DOCS_ACCELERATOR, DOCS_TORCH_NEURON),
        triggers=(b"cuda",),
        example=Example(
            before=(
                "import torch\n\n"
                "if torch.cuda.is_available():\n"
                "    torch.cuda.set_device(local_rank)\n"
                "torch.cuda.synchronize()\n"
            ),
            after=(
                "import torch\n\n"
                "if torch.accelerator.is_available():\n"
                "    torch.accelerator.set_device_index(local_rank)\n"
                "torch.accelerator.synchronize()\n"
            ),
        ),
    )
    rows = ROWS
