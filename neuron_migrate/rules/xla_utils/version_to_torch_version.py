"""NM176: torch_xla.__version__ -> torch.__version__"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Edit, Example, Rule, RuleMeta, register
from neuron_migrate.rules.tables.xla_utils import VERSION, VERSION_NAMES
from neuron_migrate.rules.xla_utils.common import DOCS_XLA_RELEASES


@register
class VersionToTorchVersion(Rule):
    """``torch_xla.__version__`` -> ``torch.__version__``: each torch_xla release was built for the
    PyTorch release of the same number (DOCS_XLA_RELEASES), so scripts read it to tell which PyTorch
    they run on (``tuple(map(int, __version__.split(".")[:2])) >= (2, 1)``), and torch's own version
    says that on TorchNeuron.

    The name is mostly read through a method (``__version__.split``), which the row tables, keyed by
    the outermost name, do not see: the rule hooks the names under it instead."""

    meta = RuleMeta(
        "NM176",
        "torch_xla.__version__ -> torch.__version__",
        safety=SAFE,
        summary=(
            "torch_xla's version number was the PyTorch release it was built for; version checks and "
            "printouts read torch's version instead."
        ),
        docs=(DOCS_XLA_RELEASES,),
        example=Example(
            before=(
                "from torch_xla import __version__\n\n"
                'version_tuple = tuple(map(int, __version__.split(".")[:2]))\n'
            ),
            after=(
                "import torch\n\n"
                'version_tuple = tuple(map(int, torch.__version__.split(".")[:2]))\n'
            ),
        ),
    )
    prefixes = VERSION_NAMES

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.read_through: set[int] = set()  # id(version name) of each ``__version__.split`` seen

    def visit_Attribute(self, node: cst.Attribute) -> None:
        # Only the spelling is checked here, on every attribute: names are resolved when left.
        value = node.value
        if (isinstance(value, cst.Name) and value.value == "__version__") or (
            isinstance(value, cst.Attribute) and value.attr.value == "__version__"
        ):
            self.read_through.add(id(value))

    def leave_Name(self, original: cst.Name, updated: cst.Name):
        return self._version(original, updated)

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute):
        if id(original.value) in self.read_through and self.ctx.any_qualified_name(original.value, VERSION_NAMES):
            # ``__version__.split``: answered as a whole, so that no part of it is left unanswered.
            return Edit(updated.with_changes(value=self._torch_version()), message=VERSION.note)
        return self._version(original, updated)

    def _version(self, original, updated):
        if id(original) in self.read_through or not self.ctx.any_qualified_name(original, VERSION_NAMES):
            return updated
        return Edit(self._torch_version(), message=VERSION.note)

    def _torch_version(self) -> cst.BaseExpression:
        return self.ctx.expr(f"{self.ctx.require_import('torch')}.__version__")
