"""NM102: "xla" device strings -> "neuron"."""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Example, Rule, RuleMeta, register
from neuron_migrate.rules.xla_device.common import (
    AUTOCAST_CALLS,
    DEVICE_FIRST_ARG,
    DEVICE_KEYWORDS,
    DOCS_CHANGES,
    DOCS_MODULE,
    from_outside,
    is_xla_string,
    legacy_name_test,
    names_a_device,
    to_neuron_string,
)


@register
class XlaDeviceString(Rule):
    """``"xla"`` / ``"xla:N"`` -> ``"neuron"`` / ``"neuron:N"``, only where the string is a device spec.

    The strings are found while visiting their call or comparison and rewritten when the string
    itself is left, so each edit covers exactly one literal.
    """

    meta = RuleMeta(
        "NM102",
        '"xla" device strings -> "neuron"',
        safety=SAFE,
        summary='Device specs "xla" and "xla:N" name the neuron device instead.',
        docs=(DOCS_CHANGES, DOCS_MODULE),
        triggers=(b"xla",),
        example=Example(
            before=(
                'batch = batch.to("xla")\n'
                'mask = torch.ones(4, device="xla:0")\n'
                'if logits.device.type == "xla":\n'
                "    pass\n"
            ),
            after=(
                'batch = batch.to("neuron")\n'
                'mask = torch.ones(4, device="neuron:0")\n'
                'if logits.device.type == "neuron":\n'
                "    pass\n"
            ),
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.device_specs: set[int] = set()

    def _mark(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.IfExp):
            # ``device = "xla" if is_torch_xla_available() else "cuda"``: either branch is the device spec
            self._mark(node.body)
            self._mark(node.orelse)
        elif is_xla_string(node):
            self.device_specs.add(id(node))

    def visit_Call(self, node: cst.Call) -> None:
        if not any(is_xla_string(arg.value) for arg in node.args):
            return
        names = self.ctx.qualified_names(node.func)
        if names & AUTOCAST_CALLS:
            return
        positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "to":
            for arg in positional:
                self._mark(arg.value)
        if names & DEVICE_FIRST_ARG and positional:
            self._mark(positional[0].value)
        for arg in node.args:
            if arg.keyword is not None and (
                arg.keyword.value in DEVICE_KEYWORDS or (arg.keyword.value == "type" and "torch.device" in names)
            ):
                self._mark(arg.value)

    def visit_Param(self, node: cst.Param) -> None:
        if node.default is not None and node.name.value in DEVICE_KEYWORDS:
            self._mark(node.default)

    def visit_Assign(self, node: cst.Assign) -> None:
        # ``device = "xla"`` then ``.to(device)``: the style of the AWS samples.
        if any(names_a_device(target.target) for target in node.targets):
            self._mark(node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None and names_a_device(node.target):
            self._mark(node.value)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        test = legacy_name_test(node, pending=False)
        if test is not None and from_outside(test[0]):
            return  # NM106: the setting may still say "xla"
        operands = [node.left, *(target.comparator for target in node.comparisons)]
        for i, target in enumerate(node.comparisons):
            left, right = operands[i], operands[i + 1]
            if isinstance(target.operator, (cst.Equal, cst.NotEqual)):
                if names_a_device(left):
                    self._mark(right)
                elif names_a_device(right):
                    self._mark(left)
            elif isinstance(target.operator, (cst.In, cst.NotIn)) and names_a_device(left):
                for element in right.elements if isinstance(right, (cst.Tuple, cst.List, cst.Set)) else ():
                    self._mark(element.value)

    def leave_SimpleString(self, original: cst.SimpleString, updated: cst.SimpleString):
        return to_neuron_string(updated) if id(original) in self.device_specs else updated

    def leave_FormattedString(self, original: cst.FormattedString, updated: cst.FormattedString):
        return to_neuron_string(updated) if id(original) in self.device_specs else updated
