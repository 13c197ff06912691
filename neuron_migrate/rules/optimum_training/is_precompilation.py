"""NM210: is_precompilation() -> False"""

from __future__ import annotations

from neuron_migrate.rules.base import REVIEW, Edit, Example, register, Rule, RuleMeta
from neuron_migrate.rules.optimum_names import optimum_names
from neuron_migrate.rules.optimum_training.common import DOCS_COMPILE, TRIGGERS

IS_PRECOMPILATION = frozenset(optimum_names("is_precompilation", "utils", "utils.misc", top_level=False))


@register
class IsPrecompilation(Rule):
    """``is_precompilation()`` was true under neuron_parallel_compile, which TorchNeuron does not have."""

    meta = RuleMeta(
        "NM210",
        "is_precompilation() -> False",
        safety=REVIEW,
        risks=frozenset({"launch"}),
        summary="neuron_parallel_compile is gone (the first run compiles and caches); the guarded branch is dead.",
        docs=(DOCS_COMPILE,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron.utils import is_precompilation\n\n"
                "if is_precompilation():\n"
                "    args.max_steps = 10\n"
            ),
            after=(
                "# neuron-migrate(NM210): neuron_parallel_compile is gone: this branch is dead code, delete it\n"
                "if False:\n"
                "    args.max_steps = 10\n"
            ),
        ),
    )
    calls = dict.fromkeys(IS_PRECOMPILATION, "false")

    def false(self, original, updated, qname):
        dead = "neuron_parallel_compile is gone: this branch is dead code, delete it"
        return Edit(self.ctx.expr("False"), review=dead)
