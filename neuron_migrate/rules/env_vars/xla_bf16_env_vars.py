"""NM502: XLA_USE_BF16 / XLA_DOWNCAST_BF16 need an explicit precision choice"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.env_vars.common import DOCS_BF16, _BF16, _EnvVarRule, _triggers


@register
class XlaBf16EnvVars(_EnvVarRule):
    """``XLA_USE_BF16`` / ``XLA_DOWNCAST_BF16``: the precision choice is made in code (DOCS_BF16)."""

    meta = RuleMeta(
        "NM502",
        "XLA_USE_BF16 / XLA_DOWNCAST_BF16 need an explicit precision choice",
        safety=MANUAL,
        risks=frozenset({"numerics"}),
        summary=(
            "The XLA full-bf16 switches (which also turned on stochastic rounding) have no effect on TorchNeuron: "
            "the setting is deleted, and a TODO in its place asks for the precision in code (cast the model, "
            "bf16=True for the Trainer, or autocast)."
        ),
        docs=(DOCS_BF16,),
        triggers=_triggers("NM502"),
        example=Example(
            before=(
                "import os\n\n"
                'os.environ["XLA_USE_BF16"] = "1"\n'
            ),
            after=(
                "import os\n\n"
                f"# TODO(neuron-migrate NM502): deleted XLA_USE_BF16: {_BF16.message}\n"
            ),
        ),
    )
