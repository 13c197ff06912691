"""NM605: CUDA memory statistics need a decision"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.cuda.common import DOCS_ACCELERATOR, DOCS_TORCH_NEURON, CudaRule
from neuron_migrate.rules.tables.cuda import ROWS, memory_step


@register
class MemoryStats(CudaRule):
    """``torch.cuda.empty_cache()`` and the CUDA memory statistics: left as they are (they run, and see no
    neuron memory) with a TODO. torch 2.13 has ``torch.accelerator`` twins of most of them, but whether the
    neuron device's allocator answers them is not documented, so the rewrite does not switch to them."""

    meta = RuleMeta(
        "NM605",
        "CUDA memory statistics need a decision",
        safety=MANUAL,
        summary="CUDA memory calls see nothing of the neuron device: a TODO says what to use instead.",
        docs=(DOCS_ACCELERATOR, DOCS_TORCH_NEURON),
        triggers=(b"cuda",),
        example=Example(
            before="import torch\n\nprint(torch.cuda.max_memory_allocated())\n",
            after=(
                "import torch\n\n"
                f"# TODO(neuron-migrate NM605): {memory_step('max_memory_allocated')}\n"
                "print(torch.cuda.max_memory_allocated())\n"
            ),
        ),
    )
    rows = ROWS
