"""NM505: XLA_USE_32BIT_LONG needs a check of int64 tensors"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.env_vars.common import DOCS_MEMORY, ENV_VARS, _EnvVarRule, _triggers


@register
class Int32LongEnvVar(_EnvVarRule):
    """``XLA_USE_32BIT_LONG`` has no TorchNeuron switch; int64 use is checked by hand (DOCS_MEMORY)."""

    meta = RuleMeta(
        "NM505",
        "XLA_USE_32BIT_LONG needs a check of int64 tensors",
        safety=MANUAL,
        risks=frozenset({"numerics"}),
        summary="XLA could store int64 as int32 on device; TorchNeuron has no such switch.",
        docs=(DOCS_MEMORY,),
        triggers=_triggers("NM505"),
        example=Example(
            before=(
                "import os\n\n"
                'os.environ["XLA_USE_32BIT_LONG"] = "1"\n'
            ),
            after=(
                "import os\n\n"
                f"# TODO(neuron-migrate NM505): XLA_USE_32BIT_LONG: {ENV_VARS['XLA_USE_32BIT_LONG'].message}\n"
                'os.environ["XLA_USE_32BIT_LONG"] = "1"\n'
            ),
        ),
    )
