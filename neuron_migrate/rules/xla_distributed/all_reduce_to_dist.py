"""NM125: xm.all_reduce() -> dist.all_reduce()"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import REVIEW, Edit, Example, RuleMeta, register
from neuron_migrate.rules.calls import bind_args, is_plain_reference, literal, receiver
from neuron_migrate.rules.tables.xla_distributed import XM
from neuron_migrate.rules.xla_distributed.common import (
    DOCS_DISTRIBUTED,
    DOCS_DIST_API,
    LEGACY_ARGUMENTS,
    REDUCE_CONSTANTS,
    REDUCE_OPS,
    SKIPPED_UNINITIALIZED,
    SUBGROUPS_STEP,
    DistributedRule,
    is_absent_or,
)


@register
class AllReduceToDist(DistributedRule):
    """xm.all_reduce(reduce_type, inputs, scale=, groups=) -> dist.all_reduce per tensor."""

    meta = RuleMeta(
        "NM125",
        "xm.all_reduce() -> dist.all_reduce()",
        safety=REVIEW,
        risks=frozenset({"collectives"}),
        summary=(
            "xm.all_reduce reduced a list in place, or returned a new tensor for a single one, and applied "
            "`scale` after the reduction; dist.all_reduce works in place on one tensor."
        ),
        docs=(DOCS_DIST_API, DOCS_DISTRIBUTED),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "total = xm.all_reduce(xm.REDUCE_SUM, loss, scale=1.0 / world_size)\n"
            ),
            after=(
                "import torch.distributed as dist\n\n"
                "# neuron-migrate(NM125): xm.all_reduce returned a new tensor for one input; "
                "check `loss` is not a list\n"
                "total = loss.clone()\n"
                "if dist.is_initialized() and dist.get_world_size() > 1:\n"
                "    dist.all_reduce(total, op=dist.ReduceOp.SUM)\n"
                "    total.mul_(1.0 / world_size)\n"
            ),
        ),
    )
    calls = {f"{XM}.all_reduce": "to_dist_all_reduce"}
    references = {f"{XM}.all_reduce": "referenced"}

    def referenced(self, original, updated, qname: str):
        # Passed as a function (functools.partial, a stored callable, an XLA FSDP option): its calls are elsewhere.
        self.ctx.manual(
            self.meta,
            original,
            "passed as a function: where it is called, reduce with `dist.all_reduce(tensor, op=dist.ReduceOp.SUM)` "
            "(in place, on one tensor; xm.all_reduce returned a new tensor for one input and took xm's reduce types)",
        )
        return updated
    PARAMS = ("reduce_type", "inputs", "scale", "groups", "pin_layout")

    def to_dist_all_reduce(self, original: cst.Call, updated: cst.Call, qname: str):
        fallback = (
            "use `dist.all_reduce(tensor, op=dist.ReduceOp.SUM)` per tensor (in place), then `tensor.mul_(scale)`"
        )
        bound = bind_args(updated, self.PARAMS)
        before = bind_args(original, self.PARAMS)
        if bound is None or before is None or "reduce_type" not in bound or "inputs" not in bound:
            return self.manual(original, updated, f"arguments not understood; {fallback}")
        if not is_absent_or(bound, "groups", None, []):
            return self.manual(original, updated, f"{SUBGROUPS_STEP} to dist.all_reduce; {fallback}")
        shape = self.shape(original)
        if shape is None:
            return self.manual(original, updated, f"used inside an expression; {fallback}")
        if self.keeps_legacy_arguments(original, updated):
            return self.manual(original, updated, LEGACY_ARGUMENTS)
        op, op_known = self.reduce_op(before["reduce_type"].value, bound["reduce_type"].value)
        scale = None if is_absent_or(bound, "scale", 1.0, 1) else code_of(bound["scale"].value)
        inputs = bound["inputs"].value
        dist = self.dist
        check_op = "" if op_known else f"; check `{op}` is a dist.ReduceOp"

        if shape[0] == "bare":
            tensors = inputs.elements if isinstance(inputs, (cst.List, cst.Tuple)) else None
            if tensors is not None and len(tensors) == 1 and not isinstance(tensors[0], cst.StarredElement):
                # One tensor in a literal list: reduce it in place, no loop needed.
                lines = self.reduce_lines(dist, receiver(tensors[0].value), op, scale, depth=0)
                return Edit(self.replace_with(original, lines), review=SKIPPED_UNINITIALIZED + check_op)
            tensor = self.fresh_name("tensor")
            lines = self.reduce_lines(dist, tensor, op, scale, depth=1)
            loop = f"\tfor {tensor} in {self.code_at(inputs, 1)}:"
            review = "the in-place loop assumes a list of tensors; for gradients prefer DDP, which buckets them"
            return Edit(self.replace_with(original, [lines[0], loop, *lines[1:]]), review=review + check_op)

        kind, target = shape
        simple_target = kind == "return" or isinstance(target, (cst.Name, cst.Attribute, cst.Subscript))
        if isinstance(inputs, (cst.List, cst.Tuple)) and simple_target:
            lines = self.reduce_list(inputs, kind, target, op, scale)
            return Edit(self.replace_with(original, lines), review=SKIPPED_UNINITIALIZED + check_op)
        if isinstance(inputs, (cst.List, cst.Tuple)) or not simple_target:
            return self.manual(original, updated, f"not of the form `y = xm.all_reduce(op, x)`; {fallback}")
        result = self.fresh_name("reduced") if kind == "return" else code_of(target)
        lines = [f"{result} = {receiver(inputs)}.clone()", *self.reduce_lines(dist, result, op, scale, depth=0)]
        if kind == "return":
            lines.append(f"return {result}")
        what = f"`{code_of(inputs)}`" if is_plain_reference(inputs) else "the input"
        review = f"xm.all_reduce returned a new tensor for one input; check {what} is not a list{check_op}"
        return Edit(self.replace_with(original, lines), review=review)

    def reduce_list(self, inputs, kind, target, op, scale) -> list[str]:
        """``y = xm.all_reduce(op, [a, b])``: the list was reduced in place and returned itself."""
        result = self.fresh_name("reduced") if kind == "return" else code_of(target)
        tensor = self.fresh_name("tensor")
        lines = self.reduce_lines(self.dist, tensor, op, scale, depth=1)
        lines = [f"{result} = {self.code_at(inputs, 0)}", lines[0], f"\tfor {tensor} in {result}:", *lines[1:]]
        if kind == "return":
            lines.append(f"return {result}")
        return lines

    def reduce_op(self, before: cst.BaseExpression, after: cst.BaseExpression) -> tuple[str, bool]:
        """The ``op=`` code, and whether it is certainly a ReduceOp (a known constant or string)."""
        constant = self.ctx.any_qualified_name(before, REDUCE_CONSTANTS.keys())
        if constant is not None:
            return f"{self.dist}.ReduceOp.{REDUCE_CONSTANTS[constant]}", True
        value = literal(before)
        if isinstance(value, str) and value in REDUCE_OPS:
            return f"{self.dist}.ReduceOp.{REDUCE_OPS[value]}", True
        return code_of(after), False

    @staticmethod
    def reduce_lines(dist: str, tensor: str, op: str, scale: str | None, depth: int) -> list[str]:
        # Scaling stays under the guard: with one process xm.all_reduce returned the input unscaled, also in a
        # process group of one (torchrun --nproc_per_node 1).
        inner = "\t" * (depth + 1)
        guard = f"{dist}.is_initialized()" if scale is None else f"{dist}.is_initialized() and {dist}.get_world_size() > 1"
        lines = [f"if {guard}:", f"{inner}{dist}.all_reduce({tensor}, op={op})"]
        if scale is not None:
            lines.append(f"{inner}{tensor}.mul_({scale})")
        return lines
