"""NM503: compile cache and debug variables renamed"""

from __future__ import annotations

from neuron_migrate.rules.base import REVIEW, Example, RuleMeta, register
from neuron_migrate.rules.env_vars.common import DOCS_ENV, DOCS_LEGACY_ENV, ENV_VARS, _EnvVarRule, _triggers


@register
class CompileCacheEnvVars(_EnvVarRule):
    """Compile-cache and framework-debug variables renamed to their TorchNeuron names (DOCS_ENV)."""

    meta = RuleMeta(
        "NM503",
        "compile cache and debug variables renamed",
        safety=REVIEW,
        risks=frozenset({"performance"}),
        summary="NEURON_COMPILE_CACHE_URL becomes TORCH_NEURONX_NEFF_CACHE_DIR (local or NFS only).",
        docs=(DOCS_ENV, DOCS_LEGACY_ENV),
        triggers=_triggers("NM503"),
        example=Example(
            before=(
                "import os\n\n"
                'os.environ["NEURON_COMPILE_CACHE_URL"] = "/fsx/neuron-cache"\n'
            ),
            after=(
                "import os\n\n"
                "# neuron-migrate(NM503): NEURON_COMPILE_CACHE_URL: "
                f"{ENV_VARS['NEURON_COMPILE_CACHE_URL'].message}\n"
                'os.environ["TORCH_NEURONX_NEFF_CACHE_DIR"] = "/fsx/neuron-cache"\n'
            ),
        ),
    )
