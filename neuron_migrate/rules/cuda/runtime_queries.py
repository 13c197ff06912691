"""NM603: torch.cuda device queries -> torch.accelerator"""

from __future__ import annotations

import re

import libcst as cst

from neuron_migrate.rules.base import SAFE, Edit, Example, Fact, RuleMeta, register
from neuron_migrate.rules.cuda.common import DOCS_ACCELERATOR, DOCS_TORCH_NEURON, CudaRule, nodes
from neuron_migrate.rules.tables.cuda import BF16_CHECK, ROWS


# true on the neuron device, false on a GPU and where there is no accelerator (None)
OTHER_ACCELERATOR = '{torch}.accelerator.current_accelerator() == {torch}.device("neuron")'


def _asked_elsewhere(ctx) -> set[int]:
    """The ``is_bf16_supported()`` calls already followed by ``or <the accelerator test>``."""
    return {id(node.left) for node in nodes(ctx.module)
            if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.Or)
            and isinstance(node.left, cst.Call) and "current_accelerator()" in ctx.code(node.right)}


CUDA_STACK = re.compile(r"torch\.version\.cuda|nccl")
BF16_OF_THE_CUDA_STACK = ("a bfloat16 test of the CUDA stack (CUDA and NCCL versions) is False on the neuron device, "
                          "which computes in bfloat16: return True there, or keep the test for GPU runs")
def _cuda_stack_tests(ctx) -> set[int]:
    """The calls inside a statement (or an ``if`` / ``while`` test) that also tests the CUDA or NCCL version."""
    found: set[int] = set()
    for node in nodes(ctx.module):
        scope = node.test if isinstance(node, (cst.If, cst.While)) else node
        if isinstance(node, (cst.SimpleStatementLine, cst.If, cst.While)) and CUDA_STACK.search(ctx.code(scope)):
            found |= {id(call) for call in nodes(scope) if isinstance(call, cst.Call)}
    return found


CUDA_STACK_TESTS = Fact("cuda_stack_tests", _cuda_stack_tests)
ASKED_ELSEWHERE = Fact("cuda_bf16_asked_elsewhere", _asked_elsewhere)
KEPT_FOR_GPUS = ("torch.cuda.is_bf16_supported() is kept for GPU runs: the test after it answers yes on the "
                 "neuron device, which computes in bfloat16")


@register
class RuntimeQueries(CudaRule):
    """``torch.cuda.is_available`` / ``device_count`` / ``set_device`` / ``current_device`` / ``synchronize`` ->
    their ``torch.accelerator`` twins (DOCS_ACCELERATOR), which answer for the GPU on a GPU and for the neuron
    device on Trainium. ``is_bf16_supported()`` keeps asking the GPU where there is one and says yes on the
    neuron device (reviewed); the other questions about the GPU itself (``get_device_properties``) have no twin of
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
        The GPU still answers on a GPU; the neuron device computes in bfloat16."""
        if id(original) in self.ctx.fact(ASKED_ELSEWHERE):
            # already asks the accelerator too (a second run): the GPU's own question stays, for GPU runs
            self.ctx.report(self.meta, original, KEPT_FOR_GPUS)
            return updated
        if id(original) in self.ctx.fact(CUDA_STACK_TESTS):
            # a test of the whole CUDA stack (CUDA and NCCL versions): answering for bfloat16 alone changes nothing
            self.ctx.manual(self.meta, original, BF16_OF_THE_CUDA_STACK)
            return updated
        torch = self.ctx.require_import("torch")
        text = f'({self.ctx.code(updated)} or {OTHER_ACCELERATOR.format(torch=torch)})'
        return Edit(self.ctx.expr(text), review=BF16_CHECK)
