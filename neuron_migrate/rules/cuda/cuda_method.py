"""NM601: .cuda() -> .to(the accelerator)"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import GlobalScope

from neuron_migrate.rules.base import REVIEW, Edit, Example, RuleMeta, register
from neuron_migrate.rules.cuda.common import DOCS_ACCELERATOR, DOCS_TORCH_NEURON, CudaRule, accelerator

# The variable CUDA scripts keep their device in: ``.cuda()`` becomes ``.to(device)`` where it is bound.
DEVICE_NAME = "device"
_INDEX_REVIEW = "the device number passed to .cuda() now picks a device of the accelerator; check it is in range"


@register
class CudaMethod(CudaRule):
    """``x.cuda()`` -> ``x.to(device)`` where a ``device`` variable is bound before it, else
    ``x.to(torch.accelerator.current_accelerator())``: the same tensor or module on a GPU, the neuron device on
    Trainium. ``x.cuda(n)`` -> ``x.to(torch.device(<accelerator type>, n))``; keywords (``non_blocking``) stay."""

    meta = RuleMeta(
        "NM601",
        ".cuda() -> .to(the accelerator)",
        safety=REVIEW,
        summary=(
            "A tensor or module moved with .cuda() goes to the script's device variable when one is bound, else to "
            "torch.accelerator.current_accelerator(): the neuron device on Trainium, the GPU on a GPU."
        ),
        docs=(DOCS_ACCELERATOR, DOCS_TORCH_NEURON),
        triggers=(b".cuda(",),
        example=Example(
            before=(
                "import torch\n\n"
                "model = torch.nn.Linear(4, 4).cuda()\n"
                "batch = torch.ones(2, 4).cuda(non_blocking=True)\n"
            ),
            after=(
                "import torch\n\n"
                "model = torch.nn.Linear(4, 4).to(torch.accelerator.current_accelerator())\n"
                "batch = torch.ones(2, 4).to(torch.accelerator.current_accelerator(), non_blocking=True)\n"
            ),
        ),
    )

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        func = updated.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "cuda"):
            return updated
        if isinstance(func.value, cst.Name) and func.value.value == "torch":
            return updated
        args = list(updated.args)
        positional = [a for a in args if a.keyword is None and not a.star]
        if any(a.star for a in args) or len(positional) > 1 or any(
            a.keyword is not None and a.keyword.value not in ("device", "non_blocking", "memory_format") for a in args
        ):
            return updated
        index = positional[0] if positional else next((a for a in args if a.keyword and a.keyword.value == "device"), None)
        rest = [a for a in args if a is not index]
        review = ""
        if index is None:
            target = DEVICE_NAME if self._device_bound(original) else accelerator(self.ctx)
        elif isinstance(index.value, cst.Name) and index.value.value == DEVICE_NAME:
            target = DEVICE_NAME
        else:
            torch = self.ctx.require_import("torch")
            target = f"{torch}.device({accelerator(self.ctx)}.type, {self.ctx.code(index.value)})"
            review = _INDEX_REVIEW
        first = cst.Arg(self.ctx.expr(target))
        new_args = [first.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))] if rest else [first]
        new_args += [a.with_changes(whitespace_after_arg=cst.SimpleWhitespace("")) for a in rest]
        if rest:
            new_args[-1] = new_args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        call = updated.with_changes(func=func.with_changes(attr=cst.Name("to")), args=new_args)
        return Edit(call, review=review, safe=not review)

    def _device_bound(self, call: cst.Call) -> bool:
        """Is ``device`` bound where the call runs, by an assignment or parameter that runs before it?"""
        scope = self.ctx.qualified.scope_of(call)
        if scope is None or DEVICE_NAME not in scope:
            return False
        line = self.ctx.span(call).line
        for assignment in scope[DEVICE_NAME]:
            node = getattr(assignment, "node", None)
            if node is None:
                continue
            if assignment.scope is not scope and isinstance(assignment.scope, GlobalScope):
                return True  # a module-level device read in a function: bound by the time it is called
            try:
                if self.ctx.span(node).line < line:
                    return True
            except KeyError:
                continue
        return False
