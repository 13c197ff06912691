"""Engine-level safety nets: legacy references no rule migrates, and compatibility shims.

These make "nothing is silently left behind" hold for APIs the tables do not know yet: every
reference to a legacy module that survives the rewrite gets a TODO marker and a report entry.
"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules import LEGACY_MODULES
from neuron_migrate.rules.base import MANUAL, REVIEW, SAFE, Edit, Example, register, Rule, RuleMeta
from neuron_migrate.rules.calls import literal

DOCS_NATIVE = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html"


@register
class UnmigratedLegacyReference(Rule):
    """Any use of a legacy module that no rule rewrote."""

    role = "leftover"
    # the modules whose references the engine reports through this rule, and whose unused imports it drops
    legacy_modules = LEGACY_MODULES

    meta = RuleMeta(
        "NM100",
        "legacy API without an automatic migration",
        safety=MANUAL,
        summary="A reference to a legacy Neuron/XLA API survived the rewrite; it will not import on TorchNeuron.",
        docs=(DOCS_NATIVE,),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "kind = xm.xla_device_kind()\n"
            ),
            after=(
                "import torch_xla.core.xla_model as xm\n\n"
                "# TODO(neuron-migrate NM100): `torch_xla.core.xla_model.xla_device_kind` has no TorchNeuron "
                "equivalent known to neuron-migrate; replace it by hand, then drop the torch_xla import\n"
                "kind = xm.xla_device_kind()\n"
            ),
        ),
    )

    @staticmethod
    def message_for(qname: str) -> str:
        legacy = next((p for p in LEGACY_MODULES if qname == p or qname.startswith(p + ".")), qname.split(".")[0])
        return (
            f"`{qname}` has no TorchNeuron equivalent known to neuron-migrate; "
            f"replace it by hand, then drop the {legacy} import"
        )

    @staticmethod
    def fix_for(qname: str) -> str:
        return f"See {DOCS_NATIVE} for the native-PyTorch way to do what `{qname}` did."


@register
class CompatibilityShim(Rule):
    """Code that only runs when the legacy stack is importable is reported, never rewritten."""

    role = "shim"

    meta = RuleMeta(
        "NM190",
        "compatibility shim left as is",
        safety=MANUAL,
        summary=(
            "Code under `try: import torch_xla` or `if is_torch_xla_available():` is kept so the file "
            "still works on both stacks; delete the legacy branch once you drop it."
        ),
        docs=(DOCS_NATIVE,),
        example=Example(
            before=(
                "try:\n"
                "    import torch_xla.core.xla_model as xm\n"
                "except ImportError:\n"
                "    xm = None\n"
            ),
            after=(
                "try:\n"
                "    import torch_xla.core.xla_model as xm\n"
                "except ImportError:\n"
                "    xm = None\n"
            ),
        ),
    )

    MESSAGE = "compatibility shim for the legacy stack kept as is; remove the legacy branch when you drop it"
    USE_MESSAGE = "uses `{name}`, which only a compatibility shim imports; kept as is for the legacy stack"


@register
class UnusedLegacyImport(Rule):
    """Imports of legacy modules that nothing reads after the migration, side-effect ones included."""

    role = "unused-import"

    meta = RuleMeta(
        "NM191",
        "unused legacy import removed",
        safety=SAFE,
        summary=(
            "torch_xla is not installed next to TorchNeuron, so an import of it that nothing uses any more "
            "(or that only registered the XLA backend) would fail at start-up."
        ),
        docs=(DOCS_NATIVE,),
        example=Example(
            before=(
                "import torch\n"
                "import torch_xla.distributed.xla_backend  # registers the xla process-group backend\n\n"
                "x = torch.ones(2)\n"
            ),
            after="import torch\n\nx = torch.ones(2)\n",
        ),
    )


def legacy_module_named(text: object) -> str | None:
    """The legacy module a string names (``"torch_xla"``, ``"torch_xla.core.xla_model"``), if any."""
    if not isinstance(text, str):
        return None
    return next((p for p in LEGACY_MODULES if text == p or text.startswith(p + ".")), None)


@register
class LegacyModuleLoadedCheck(Rule):
    """``"torch_xla" in sys.modules``: code that asked whether the legacy stack was loaded. On TorchNeuron
    it never is, so the check is always False; folding it says so in the code instead of keeping a test
    that can no longer pass (and a string that looks like a use of the legacy import)."""

    meta = RuleMeta(
        "NM192",
        "`\"torch_xla\" in sys.modules` folded to False",
        safety=REVIEW,
        summary=(
            "A check that a legacy module is loaded is always False once the legacy stack is gone; it is folded "
            "to False (True for `not in`) so the code it guards shows as legacy-only."
        ),
        docs=(DOCS_NATIVE,),
        triggers=(b"sys.modules",),
        example=Example(
            before=(
                "import sys\n\n"
                'on_xla = "torch_xla" in sys.modules\n'
            ),
            after=(
                "import sys\n\n"
                '# neuron-migrate(NM192): `"torch_xla" in sys.modules` is always False on TorchNeuron: folded to '
                "False; delete the code that only ran on the legacy stack\n"
                "on_xla = False\n"
            ),
        ),
    )

    def leave_Comparison(self, original: cst.Comparison, updated: cst.Comparison):
        if len(updated.comparisons) != 1:
            return updated
        target = updated.comparisons[0]
        negated = isinstance(target.operator, cst.NotIn)
        if not isinstance(target.operator, (cst.In, cst.NotIn)) or code_of(target.comparator).strip() != "sys.modules":
            return updated
        if legacy_module_named(literal(updated.left)) is None:
            return updated
        check = code_of(original).strip()
        value = "True" if negated else "False"
        then = "drop the check, keep what it guarded" if negated else "delete the code that only ran on the legacy stack"
        folded = cst.Name(value, lpar=updated.lpar, rpar=updated.rpar)
        return Edit(folded, review=f"`{check}` is always {value} on TorchNeuron: folded to {value}; {then}")
