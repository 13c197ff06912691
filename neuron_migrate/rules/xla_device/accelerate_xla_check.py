"""NM107: accelerate's ``distributed_type == DistributedType.XLA`` -> the neuron device check."""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import REVIEW, Edit, Example, Rule, RuleMeta, register
from neuron_migrate.rules.xla_device.common import DOCS_CHANGES

# accelerate's enum, by every module that exports it
XLA_TYPE = frozenset(
    f"{module}.DistributedType.XLA"
    for module in ("accelerate", "accelerate.utils", "accelerate.utils.dataclasses", "accelerate.state")
)
_EQUAL = (cst.Equal, cst.Is)
_NOT_EQUAL = (cst.NotEqual, cst.IsNot)


@register
class AccelerateXlaCheck(Rule):
    """``accelerator.distributed_type == DistributedType.XLA`` asked "are we on the XLA device". With TorchNeuron
    accelerate reports MULTI_NEURON on several cores and NO on one, so the check is never true there; what it
    meant is read from the device the accelerator (or its state) runs on. With --keep-dual-stack the XLA check
    stays and the neuron one joins it with ``or``."""

    meta = RuleMeta(
        "NM107",
        "accelerate's DistributedType.XLA check -> the neuron device check",
        safety=REVIEW,
        summary=(
            "`distributed_type == DistributedType.XLA` is never true on TorchNeuron (accelerate reports MULTI_NEURON "
            'or NO there): it becomes `<accelerator>.device.type == "neuron"`.'
        ),
        docs=(DOCS_CHANGES,),
        triggers=(b"DistributedType",),
        example=Example(
            before=(
                "from accelerate import Accelerator, DistributedType\n\n"
                "accelerator = Accelerator()\n"
                "if accelerator.distributed_type == DistributedType.XLA:\n"
                "    model.tie_weights()\n"
            ),
            after=(
                "from accelerate import Accelerator, DistributedType\n\n"
                "accelerator = Accelerator()\n"
                "# neuron-migrate(NM107): TorchNeuron's accelerate reports MULTI_NEURON or NO, never XLA: the test now "
                "asks whether the accelerator is on the neuron device; check that what it guards is still needed there\n"
                'if accelerator.device.type == "neuron":\n'
                "    model.tie_weights()\n"
            ),
        ),
    )
    REVIEW = (
        "TorchNeuron's accelerate reports MULTI_NEURON or NO, never XLA: the test now asks whether the accelerator is "
        "on the neuron device; check that what it guards is still needed there"
    )
    UNKNOWN_OWNER = (
        "accelerate reports MULTI_NEURON or NO on TorchNeuron, never XLA: compare the accelerator's device type with "
        '"neuron" instead'
    )

    # Declared so that names imported from accelerate get resolved; the comparison around one is what is rewritten.
    references = {name: "enum_member" for name in XLA_TYPE}

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.paired: set[int] = set()  # id(comparison) already joined with its neuron check (--keep-dual-stack)

    def enum_member(self, original, updated, qname):
        return updated

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        # a rerun over ``(... == DistributedType.XLA or accelerator.device.type == "neuron")``
        if isinstance(node.right, cst.Comparison) and '.device.type' in self.ctx.code(node.right):
            self.paired.add(id(node.left))

    def leave_Comparison(self, original: cst.Comparison, updated: cst.Comparison):
        if len(original.comparisons) != 1 or id(original) in self.paired:
            return updated
        target = original.comparisons[0]
        if not isinstance(target.operator, (*_EQUAL, *_NOT_EQUAL)):
            return updated
        if self.ctx.any_qualified_name(target.comparator, XLA_TYPE):
            owner = updated.left
        elif self.ctx.any_qualified_name(original.left, XLA_TYPE):
            owner = updated.comparisons[0].comparator
        else:
            return updated
        if not (isinstance(owner, cst.Attribute) and owner.attr.value == "distributed_type"):
            self.ctx.manual(self.meta, original, self.UNKNOWN_OWNER)
            return updated
        operator = "==" if isinstance(target.operator, _EQUAL) else "!="
        check = self.ctx.expr(f'{self.ctx.code(owner.value)}.device.type {operator} "neuron"')
        if self.ctx.keep_dual_stack:
            joined = "or" if operator == "==" else "and"
            return Edit(self.ctx.expr(f"({self.ctx.code(updated).strip()} {joined} {self.ctx.code(check)})"), review=self.REVIEW)
        return Edit(check.with_changes(lpar=updated.lpar, rpar=updated.rpar), review=self.REVIEW)
