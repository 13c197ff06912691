"""Engine-level safety nets: legacy references no rule migrates, and compatibility shims.

These make "nothing is silently left behind" hold for APIs the tables do not know yet: every
reference to a legacy module that survives the rewrite gets a TODO marker and a report entry.
"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules import LEGACY_MODULES, LEGACY_ROOTS
from neuron_migrate.rules.base import MANUAL, REVIEW, SAFE, Edit, Example, register, Rule, RuleMeta
from neuron_migrate.rules.calls import literal
from neuron_migrate.rules.optimum_names import optimum_names

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


# An availability check of the legacy stack -> TorchNeuron's (transformers' for transformers' and for
# optimum-neuron's, accelerate's for accelerate's). Before TorchNeuron these were all True on Trainium.
_TRANSFORMERS_CHECK = "transformers.utils.is_torch_neuron_available"
_ACCELERATE_CHECK = "accelerate.utils.is_neuron_available"
AVAILABILITY_CHECKS = {
    **{
        f"{module}.{name}": _TRANSFORMERS_CHECK
        for module in ("transformers", "transformers.utils", "transformers.utils.import_utils")
        for name in ("is_torch_xla_available", "is_torch_tpu_available", "is_torch_neuroncore_available")
    },
    **{
        f"{module}.{name}": _ACCELERATE_CHECK
        for module in ("accelerate.utils", "accelerate.utils.imports")
        for name in ("is_torch_xla_available", "is_tpu_available")
    },
    **{
        qname: _TRANSFORMERS_CHECK
        for name in ("is_neuronx_available", "is_torch_neuronx_available")
        for qname in optimum_names(name, "utils", "utils.import_utils", top_level=False)
    },
}


@register
class CompatibilityShim(Rule):
    """Dual-stack code: a ``try: import torch_xla ... except ImportError:`` that picks the XLA device when it
    can, and branches under ``if is_torch_xla_available():``. By default the XLA branch is migrated in
    place: the rules migrate the code under the guard, the check becomes TorchNeuron's, and a ``try``
    whose legacy imports all went imports ``torch_neuronx`` instead, so its except branch (the fallback for
    machines without the device) still runs where TorchNeuron is not installed. With --keep-dual-stack the
    XLA branch stays and the code gains a neuron branch beside it."""

    role = "shim"
    # The TorchNeuron probe: an explicit import is otherwise not needed (torch loads torch_neuronx by itself).
    PROBE = "import torch_neuronx  # noqa: F401 (fails where TorchNeuron is not installed)"
    PROBE_MESSAGE = (
        "the try now tests for TorchNeuron: `import torch_neuronx` replaces its legacy imports and the code "
        "under it is migrated; its except branch still runs where TorchNeuron is not installed"
    )
    GONE_MESSAGE = "the try did nothing but import legacy modules that nothing uses any more: removed with them"
    LEGACY_IMPORT_KEPT = (
        "this try still imports a legacy module for code without an automatic migration (see the TODOs below): "
        "on TorchNeuron that import fails and the except branch runs, until that code is migrated"
    )
    CHECK_MESSAGE = "availability check of the legacy stack -> TorchNeuron's: the code it guards now runs on the neuron device"
    calls = {name: "availability_check" for name in AVAILABILITY_CHECKS}
    # the short names whose call makes an ``if`` a dual-stack guard: the checks above, and optimum-neuron's
    # checks of legacy packages, which have no TorchNeuron check to become
    guard_names = tuple(
        dict.fromkeys(
            [
                *(qname.rsplit(".", 1)[1] for qname in AVAILABILITY_CHECKS),
                "is_neuronx_distributed_available",
                "is_optimum_neuron_available",
            ]
        )
    )
    follow_up_todos = True  # the import pass keeps its marker true itself

    meta = RuleMeta(
        "NM190",
        "dual-stack guard moved to TorchNeuron",
        safety=SAFE,
        summary=(
            "Code under `try: import torch_xla` or `if is_torch_xla_available():` ran on Trainium through the XLA "
            "stack; it is migrated in place and its guard now tests for TorchNeuron, keeping the fallback for "
            "machines without the device. `--keep-dual-stack` keeps the XLA branch and adds a neuron one."
        ),
        docs=(DOCS_NATIVE,),
        # a guard imports a legacy module or calls an availability check
        triggers=(*(root.encode() for root in LEGACY_ROOTS), *(name.encode() for name in guard_names)),
        example=Example(
            before=(
                "import torch\n\n"
                "try:\n"
                "    import torch_xla.core.xla_model as xm\n\n"
                "    device = xm.xla_device()\n"
                "except ImportError:\n"
                '    device = torch.device("cpu")\n'
            ),
            after=(
                "import torch\n\n"
                "try:\n"
                "    import torch_neuronx  # noqa: F401 (fails where TorchNeuron is not installed)\n\n"
                '    device = torch.device("neuron")\n'
                "except ImportError:\n"
                '    device = torch.device("cpu")\n'
            ),
        ),
    )

    # --keep-dual-stack
    NEURON_AVAILABLE = 'hasattr({torch}, "neuron") and {torch}.neuron.is_available()'
    NEURON_CHECKS = ("is_torch_neuron_available", "is_neuron_available", ".neuron.is_available()")
    PAIRED_MESSAGE = "legacy branch kept (--keep-dual-stack) and a neuron branch added beside it"
    PAIRED_REVIEW = (
        "this guard's torch_xla branch is kept and its migrated copy runs on TorchNeuron (--keep-dual-stack): "
        "keep the two in step, and drop the torch_xla one with the legacy stack"
    )
    UNPAIRED_MESSAGE = (
        "kept for the legacy stack (--keep-dual-stack), but of a shape the tool does not pair: add the neuron "
        "branch by hand (test with is_torch_neuron_available(); device torch.device(\"neuron\"))"
    )
    MESSAGE = "compatibility shim for the legacy stack kept as is; remove the legacy branch when you drop it"
    USE_MESSAGE = "uses `{name}`, which only a compatibility shim imports; kept as is for the legacy stack"

    PROBE_NAME = "torch_neuronx"  # the name the probe binds
    PRESENCE_MESSAGE = (
        "`{name}` was None where its legacy import failed: its tests now ask whether TorchNeuron was imported "
        "(the handler sets `torch_neuronx = None`)"
    )

    # ----- ``except ImportError: met = None`` ... ``if met is not None:``: presence tests of a fallback name.
    # They are answered here (no leftover marker: they only test), and the import pass makes them test the
    # probe instead once nothing else reads the name (see imports.probe_presence_tests).
    def leave_Comparison(self, original: cst.Comparison, updated: cst.Comparison):
        if not self.ctx.guard_fallbacks or len(original.comparisons) != 1:
            return updated
        target = original.comparisons[0]
        if isinstance(target.operator, (cst.Is, cst.IsNot)) and code_of(target.comparator) == "None":
            self._presence([original.left])
        return updated

    def leave_UnaryOperation(self, original: cst.UnaryOperation, updated: cst.UnaryOperation):
        if self.ctx.guard_fallbacks and isinstance(original.operator, cst.Not):
            self._presence([original.expression])
        return updated

    def leave_If(self, original: cst.If, updated: cst.If):
        if self.ctx.guard_fallbacks:
            self._presence(list(_test_operands(original.test)))
        return updated

    def leave_While(self, original: cst.While, updated: cst.While):
        if self.ctx.guard_fallbacks:
            self._presence(list(_test_operands(original.test)))
        return updated

    def _presence(self, operands) -> None:
        names = [n for n in operands if self._is_fallback(n)]
        if names:
            self.ctx.probed_names.update(n.value for n in names)
            self.ctx.answered_by_enclosing_call()

    def _is_fallback(self, node) -> bool:
        if self.ctx.guards_kept or not isinstance(node, cst.Name) or node.value not in self.ctx.guard_fallbacks:
            return False
        return any(legacy_module_named(q) for q in self.ctx.qualified_names(node))

    def availability_check(self, original: cst.Call, updated: cst.Call, qname: str):
        if self.ctx.guards_kept and not self.ctx.neuron_copy_depth:
            return updated
        if _checks_xla_on_gpu(updated):
            self.ctx.manual(
                self.meta, original, "checks for torch_xla on a GPU, not for a Trainium device: drop this branch"
            )
            return updated
        home, _, name = AVAILABILITY_CHECKS[qname].rpartition(".")
        check = updated.with_changes(func=self.ctx.expr(self.ctx.require_from_import(home, name)), args=[])
        return Edit(check, message=self.CHECK_MESSAGE, safe=True)


def _test_operands(test: cst.BaseExpression):
    """The operands of a branch test joined by ``and`` / ``or`` (the test itself when it is not)."""
    if isinstance(test, cst.BooleanOperation):
        yield from _test_operands(test.left)
        yield from _test_operands(test.right)
    else:
        yield test


def _checks_xla_on_gpu(call: cst.Call) -> bool:
    return any(arg.keyword is not None and arg.keyword.value == "check_is_gpu" for arg in call.args)


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


@register
class LegacyAttributeCheck(Rule):
    """``hasattr(torch_neuronx, "trace")``: code that asked whether a legacy API is there. On TorchNeuron it
    is not, so the check is False and the code it guards (often migrated by the other rules, a trace become
    torch.compile) never runs; a TODO says so, since only a human knows whether that code should now run."""

    meta = RuleMeta(
        "NM193",
        "check for a legacy API is False on TorchNeuron",
        safety=MANUAL,
        summary=(
            "`hasattr(module, name)` of an API only the legacy stack had is always False on TorchNeuron: the code "
            "it guards never runs there."
        ),
        docs=(DOCS_NATIVE,),
        # the module asked about is named in the file: `hasattr` alone would have every module parsed
        triggers=tuple(root.encode() for root in LEGACY_ROOTS),
        example=Example(
            before=(
                "import torch_neuronx\n\n"
                'if hasattr(torch_neuronx, "trace"):\n'
                "    compiled = True\n"
            ),
            after=(
                "import torch_neuronx\n\n"
                '# TODO(neuron-migrate NM193): `hasattr(torch_neuronx, "trace")` is always False on TorchNeuron, which has '
                "no `torch_neuronx.trace`: the code it guards never runs there; drop the check if that code should run "
                "(migrated, it no longer needs the legacy API)\n"
                'if hasattr(torch_neuronx, "trace"):\n'
                "    compiled = True\n"
            ),
        ),
    )

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        func = original.func
        if type(func) is not cst.Name or func.value != "hasattr" or len(original.args) != 2:
            return updated
        name = literal(original.args[1].value)
        if not isinstance(name, str):
            return updated
        for module in self.ctx.qualified_names(original.args[0].value):
            legacy = legacy_module_named(f"{module}.{name}")
            if legacy is not None:
                check = code_of(original).strip()
                self.ctx.manual(
                    self.meta,
                    original,
                    f"`{check}` is always False on TorchNeuron, which has no `{module}.{name}`: the code it guards "
                    "never runs there; drop the check if that code should run (migrated, it no longer needs the "
                    "legacy API)",
                )
                return updated
        return updated
