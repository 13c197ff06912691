"""NM501: PyTorch/XLA runtime and debug variables removed"""

from __future__ import annotations

from neuron_migrate.rules.base import SAFE, Example, RuleMeta, register
from neuron_migrate.rules.env_vars.common import DOCS_ENV, DOCS_LEGACY_ENV, _EnvVarRule, _triggers


@register
class XlaRuntimeEnvVars(_EnvVarRule):
    """PJRT/XLA runtime and debug variables are deleted (DOCS_ENV lists TorchNeuron's own)."""

    meta = RuleMeta(
        "NM501",
        "PyTorch/XLA runtime and debug variables removed",
        safety=SAFE,
        summary="PJRT_DEVICE, XLA_* debug switches and neuron_parallel_compile variables mean nothing on TorchNeuron.",
        docs=(DOCS_ENV, DOCS_LEGACY_ENV),
        triggers=_triggers("NM501"),
        example=Example(
            before=(
                "import os\n\n"
                'os.environ["PJRT_DEVICE"] = "NEURON"\n'
                'os.environ.setdefault("XLA_IR_DEBUG", "1")\n'
                'os.environ["OMP_NUM_THREADS"] = "8"\n'
            ),
            after=(
                "import os\n\n"
                'os.environ["OMP_NUM_THREADS"] = "8"\n'
            ),
        ),
    )
