"""NM106: device names from outside accept "neuron" and the legacy "xla"."""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import REVIEW, Edit, Example, Fact, Rule, RuleMeta, register
from neuron_migrate.rules.xla_device.common import (
    DOCS_CHANGES,
    _HELPER_REVIEW,
    _OPTION_REVIEW,
    _SETTING_REVIEW,
    _UNKNOWN_HELPER,
    _XLA_CONSTRUCTOR_WORDS,
    _HelperShape,
    _is_bare_xla,
    _is_neuron,
    _names_a_device_setting,
    from_outside,
    legacy_name_test,
    names_a_device,
    to_neuron_string,
    with_neuron_accepted,
    xla_device_calls,
)

MAKES_XLA_DEVICE = Fact("makes_xla_device", lambda ctx: bool(_XLA_CONSTRUCTOR_WORDS.search(ctx.text)))


@register
class LegacyDeviceNameAccepted(Rule):
    """A device name the program is given may still say ``"xla"`` after the migration.

    Launch scripts, configs and environments written for torch_xla pass ``--device xla``; a check
    rewritten to ``== "neuron"`` would silently skip the device branch for them. So a check of such
    a value accepts both names, a device-picking helper's ``"xla"`` branch gives the neuron device
    for both, and a ``--device`` option defaults to ``"neuron"`` while still accepting ``"xla"``.
    A helper whose shape is not recognised gets a TODO marker saying what to change.
    """

    meta = RuleMeta(
        "NM106",
        'device names from outside accept "neuron" and the legacy "xla"',
        safety=REVIEW,
        risks=frozenset({"launch"}),
        summary=(
            'A device name read from argv, the environment or a config may still be "xla": checks and '
            'device-picking helpers accept both names; --device options default to "neuron".'
        ),
        docs=(DOCS_CHANGES,),
        triggers=(b"xla",),
        example=Example(
            before=(
                "import argparse\n\n"
                "import torch\n"
                "import torch_xla.core.xla_model as xm\n\n\n"
                "def get_device(name):\n"
                '    if name == "xla":\n'
                "        return xm.xla_device()\n"
                '    return torch.device("cpu")\n\n\n'
                "parser = argparse.ArgumentParser()\n"
                'parser.add_argument("--device", default="xla", choices=["cpu", "xla"])\n'
                "args = parser.parse_args()\n"
                "device = get_device(args.device)\n"
                'if args.device == "xla":\n'
                "    print(device)\n"
            ),
            after=(
                "import argparse\n\n"
                "import torch\n\n\n"
                "def get_device(name):\n"
                f"    # neuron-migrate(NM106): {_HELPER_REVIEW}\n"
                '    if name in ("neuron", "xla"):\n'
                '        return torch.device("neuron")\n'
                '    return torch.device("cpu")\n\n\n'
                "parser = argparse.ArgumentParser()\n"
                f"# neuron-migrate(NM106): {_OPTION_REVIEW}\n"
                'parser.add_argument("--device", default="neuron", choices=["cpu", "neuron", "xla"])\n'
                "args = parser.parse_args()\n"
                "device = get_device(args.device)\n"
                f"# neuron-migrate(NM106): {_SETTING_REVIEW}\n"
                'if args.device in ("neuron", "xla"):\n'
                "    print(device)\n"
            ),
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.tests: dict[int, str] = {}  # id(comparison) -> review message
        self.helper_tests: set[int] = set()
        self.options: set[int] = set()

    # -- recording, top-down ------------------------------------------------------------------
    def visit_If(self, node: cst.If) -> None:
        tests = [node.test]
        if isinstance(node.test, cst.BooleanOperation) and isinstance(node.test.operator, cst.Or):
            tests = [node.test.left, node.test.right]
        tests = [t for t in tests if isinstance(t, cst.Comparison) and legacy_name_test(t) is not None]
        if not tests:
            return
        found = xla_device_calls(self.ctx, node.body)
        if found.calls:
            self.helper_tests.update(id(t) for t in tests)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        test = legacy_name_test(node)
        if test is None:
            return
        operand = test[0]
        if from_outside(operand):
            self.tests[id(node)] = _SETTING_REVIEW
        elif id(node) in self.helper_tests and not names_a_device(operand):
            self.tests[id(node)] = _HELPER_REVIEW

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "add_argument":
            names = [a.value for a in node.args if a.keyword is None] + [
                a.value for a in node.args if a.keyword is not None and a.keyword.value == "dest"
            ]
            if any(_names_a_device_setting(name) for name in names) and self._option_change(node) is not node:
                self.options.add(id(node))

    # -- rewriting, bottom-up -----------------------------------------------------------------
    def leave_Comparison(self, original: cst.Comparison, updated: cst.Comparison):
        message = self.tests.get(id(original))
        if message is None:
            return updated
        test = legacy_name_test(updated)
        if test is None:
            return updated
        operand, legacy = test
        target = updated.comparisons[0]
        negated = isinstance(target.operator, (cst.NotEqual, cst.NotIn))
        if isinstance(legacy, cst.SimpleString):
            names = with_neuron_accepted(cst.Tuple([cst.Element(legacy)]))
        else:
            names = with_neuron_accepted(legacy)
        comparison = cst.ComparisonTarget(operator=cst.NotIn() if negated else cst.In(), comparator=names)
        return Edit(
            updated.with_changes(left=operand, comparisons=[comparison]),
            message='device-name check accepts "neuron" and the legacy "xla"',
            review=message,
        )

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        if id(original) in self.options:
            choices = next((a.value for a in updated.args if a.keyword and a.keyword.value == "choices"), None)
            fixed = choices is None or isinstance(choices, (cst.Tuple, cst.List, cst.Set))
            return Edit(
                self._option_change(updated),
                message='--device option defaults to "neuron" and accepts it',
                review=_OPTION_REVIEW if fixed else _OPTION_REVIEW + '; add "neuron" to its choices',
            )
        return updated

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef):
        if self.ctx.fact(MAKES_XLA_DEVICE):
            shape = _HelperShape(self.ctx, self.tests)
            original.body.visit(shape)
            if shape.makes_device and shape.picks_by_name:
                self.ctx.manual(self.meta, original, _UNKNOWN_HELPER)
        return updated

    @staticmethod
    def _option_change(call: cst.Call) -> cst.Call:
        """``add_argument(..., default="xla", choices=[..., "xla"])`` with "neuron" as the default and
        among the choices (the same call when there is nothing to change)."""
        args = []
        for arg in call.args:
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword == "default" and _is_bare_xla(arg.value):
                arg = arg.with_changes(value=to_neuron_string(arg.value))
            elif (
                keyword == "choices"
                and isinstance(arg.value, (cst.Tuple, cst.List, cst.Set))
                and not any(_is_neuron(e.value) for e in arg.value.elements)
                and any(_is_bare_xla(e.value) for e in arg.value.elements)
            ):
                arg = arg.with_changes(value=with_neuron_accepted(arg.value))
            args.append(arg)
        return call if all(a is b for a, b in zip(args, call.args)) else call.with_changes(args=args)
