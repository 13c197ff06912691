"""Engine-level safety nets: legacy references no rule migrates, and compatibility shims.

These make "nothing is silently left behind" hold for APIs the tables do not know yet: every
reference to a legacy module that survives the rewrite gets a TODO marker and a report entry.
"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, SAFE, Example, Rule, RuleMeta, register

DOCS_NATIVE = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html"


@register
class UnmigratedLegacyReference(Rule):
    """Any use of a legacy module that no rule rewrote."""

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
        from neuron_migrate.rules import LEGACY_MODULES

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
