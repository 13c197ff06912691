"""NM603: torch.cuda device queries -> torch.accelerator"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Edit, Example, Fact, RuleMeta, register
from neuron_migrate.rules.cuda.common import DOCS_ACCELERATOR, DOCS_TORCH_NEURON, CudaRule
from neuron_migrate.rules.tables.cuda import BF16_CHECK, ROWS


# true on an accelerator that is not a GPU (the neuron device); the "None" of no accelerator is false
OTHER_ACCELERATOR = 'str({torch}.accelerator.current_accelerator()) not in ("cuda", "None")'


def _asked_elsewhere(ctx) -> set[int]:
    """The ``is_bf16_supported()`` calls already followed by ``or <the accelerator test>``."""
    found: set[int] = set()
    stack: list[cst.CSTNode] = [ctx.module]
    while stack:
        node = stack.pop()
        if (isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.Or)
                and isinstance(node.left, cst.Call) and "current_accelerator()" in ctx.code(node.right)):
            found.add(id(node.left))
        stack.extend(child for child in node.children if isinstance(child, cst.CSTNode))
    return found


ASKED_ELSEWHERE = Fact("cuda_bf16_asked_elsewhere", _asked_elsewhere)


@register
class RuntimeQueries(CudaRule):
    """``torch.cuda.is_available`` / ``device_count`` / ``set_device`` / ``current_device`` / ``synchronize`` ->
    their ``torch.accelerator`` twins (DOCS_ACCELERATOR), which answer for the GPU on a GPU and for the neuron
    device on Trainium. ``is_bf16_supported()`` keeps asking the GPU where there is one and says yes for another
    accelerator (reviewed); the other questions about the GPU itself (``get_device_properties``) have no twin of
    the same meaning: they get a TODO."""

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
    calls = {"torch.cuda.is_bf16_supported": "bf16_check"}

    def bf16_check(self, original: cst.Call, updated: cst.Call, qname: str):
        """``torch.cuda.is_bf16_supported()`` is False on the neuron device (no CUDA): scripts that pick their
        dtype with it (nanoGPT's ``"bfloat16" if ... else "float16"``) fall back to float16 and a GradScaler.
        The GPU still answers on a GPU; any other accelerator computes in bfloat16."""
        if id(original) in self.ctx.fact(ASKED_ELSEWHERE):
            return updated  # already asks the accelerator too (a second run)
        torch = self.ctx.require_import("torch")
        text = f'({self.ctx.code(updated)} or {OTHER_ACCELERATOR.format(torch=torch)})'
        return Edit(self.ctx.expr(text), review=BF16_CHECK)
