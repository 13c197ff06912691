"""NM504: XLA-era flags dropped from NEURON_CC_FLAGS"""

from __future__ import annotations

from neuron_migrate.rules.base import REVIEW, Example, RuleMeta, register
from neuron_migrate.rules.env_vars.common import DOCS_ENV, ENV_VARS, _EnvVarRule, _triggers


@register
class CompilerFlagsEnvVar(_EnvVarRule):
    """``NEURON_CC_FLAGS`` is still read; its XLA-era cache flags are dropped (DOCS_ENV)."""

    meta = RuleMeta(
        "NM504",
        "XLA-era flags dropped from NEURON_CC_FLAGS",
        safety=REVIEW,
        risks=frozenset({"performance"}),
        summary=(
            "--cache_dir and --retry_failed_compilation belonged to the XLA integration. They are dropped where "
            "they are written: in the setting, in the string variables it is built from (flags += \" --x\", "
            "FLAGS=\"$FLAGS --x\"), and in a dict of variables for a launcher."
        ),
        docs=(DOCS_ENV,),
        triggers=_triggers("NM504"),
        example=Example(
            before=(
                "import os\n\n"
                'os.environ["NEURON_CC_FLAGS"] = "--model-type=transformer --cache_dir=/var/tmp/cache"\n'
            ),
            after=(
                "import os\n\n"
                "# neuron-migrate(NM504): "
                + ENV_VARS["NEURON_CC_FLAGS"].message.format(flags="--cache_dir=/var/tmp/cache")
                + "\n"
                'os.environ["NEURON_CC_FLAGS"] = "--model-type=transformer"\n'
            ),
        ),
    )
