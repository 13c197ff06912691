"""NM219: optimum-neuron test decorators -> a skip without a Neuron device and the pytest mark"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import SAFE, Edit, Example, register, Rule, RuleMeta
from neuron_migrate.rules.optimum_names import optimum_names
from neuron_migrate.rules.optimum_training.common import TRIGGERS

# optimum.neuron.utils.testing_utils decorator -> the pytest mark it set besides skipping without Neuron
TEST_DECORATORS = {"requires_neuronx": None, "is_trainium_test": "is_trainium_test",
                   "is_inferentia_test": "is_inferentia_test", "slow": "slow"}  # fmt: skip
TESTING_UTILS = {
    qname: name
    for name in TEST_DECORATORS
    for qname in optimum_names(name, "utils.testing_utils", top_level=False)
}
SKIP_DECORATOR = "requires_neuron_device"
SKIP_WHY = "optimum-neuron's test decorators skipped a test without a Neuron device; this one does the same"


@register
class TestDecorators(Rule):
    """``@requires_neuronx`` / ``@is_trainium_test`` / ``@is_inferentia_test`` / ``@slow`` of
    ``optimum.neuron.utils.testing_utils`` skipped a test unless the Neuron compiler was installed
    (``unittest.skipUnless``) and set a pytest mark. The same skip, on the device TorchNeuron exposes
    as ``torch.neuron``, and the same mark."""

    meta = RuleMeta(
        "NM219",
        "optimum-neuron test decorators -> a skip without a Neuron device and the pytest mark",
        safety=SAFE,
        summary=(
            "One module-level `requires_neuron_device = unittest.skipUnless(torch.neuron.is_available(), ...)` "
            "replaces @requires_neuronx; @is_trainium_test, @is_inferentia_test and @slow become that skip plus "
            "their pytest mark."
        ),
        docs=("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/api/torch-neuron-module.html",),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron.utils.testing_utils import is_trainium_test\n\n"
                "@is_trainium_test\n"
                "def test_train():\n"
                "    train()\n"
            ),
            after=(
                "import pytest\n"
                "import torch\n"
                "import unittest\n\n"
                f"# {SKIP_WHY}\n"
                f"{SKIP_DECORATOR} = unittest.skipUnless(\n"
                '    hasattr(torch, "neuron") and torch.neuron.is_available(), "test requires a Neuron device"\n'
                ")\n\n\n"
                "@pytest.mark.is_trainium_test\n"
                f"@{SKIP_DECORATOR}\n"
                "def test_train():\n"
                "    train()\n"
            ),
        ),
    )
    references = dict.fromkeys(TESTING_UTILS, "decorator")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.decorators: set[int] = set()  # id of every bare decorator expression
        self.marked: set[int] = set()  # decorators that became a mark: the skip goes after them

    def visit_Decorator(self, node: cst.Decorator) -> None:
        self.decorators.add(id(node.decorator))

    def decorator(self, original, updated, qname: str):
        name = TESTING_UTILS[qname]
        if id(original) not in self.decorators:
            self.ctx.manual(
                self.meta, original, f"{name} is an optimum-neuron test helper: decorate with {SKIP_DECORATOR} instead"
            )
            return updated
        torch = self.ctx.require_import("torch")
        unittest = self.ctx.require_import("unittest")
        skip = (
            f"{SKIP_DECORATOR} = {unittest}.skipUnless(\n"
            f'    hasattr({torch}, "neuron") and {torch}.neuron.is_available(), "test requires a Neuron device"\n)'
        )
        self.ctx.add_setup(self.meta, original, skip, SKIP_WHY, unless=f"{SKIP_DECORATOR} =")
        mark = TEST_DECORATORS[name]
        message = f"@{name} -> @{SKIP_DECORATOR}" + (f" and @pytest.mark.{mark}" if mark else "")
        if mark is None:
            return Edit(cst.Name(SKIP_DECORATOR), message=message)
        self.marked.add(id(original))
        return Edit(self.ctx.expr(f"{self.ctx.require_import('pytest')}.mark.{mark}"), message=message)

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef):
        return self._with_skips(original, updated)

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef):
        return self._with_skips(original, updated)

    def _with_skips(self, original, updated):
        if not any(id(d.decorator) in self.marked for d in original.decorators):
            return updated
        decorators = []
        has_skip = any(code_of(d.decorator) == SKIP_DECORATOR for d in updated.decorators)
        for before, after in zip(original.decorators, updated.decorators):
            decorators.append(after)
            if id(before.decorator) in self.marked and not has_skip:
                decorators.append(cst.Decorator(decorator=cst.Name(SKIP_DECORATOR)))
                has_skip = True  # one skip is enough for several marks
        if len(decorators) == len(updated.decorators):
            return updated
        added = f"@{SKIP_DECORATOR} added after the pytest mark"
        return Edit(updated.with_changes(decorators=decorators), message=added, safe=True)
