"""NM132: xm.get_rng_state() needs a human"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.tables.xla_distributed import ROWS
from neuron_migrate.rules.xla_distributed.common import DOCS_MODULE, DistributedRule


@register
class GetRngStateManual(DistributedRule):
    """xm.get_rng_state() returned the device seed as an int; there is no int-seed query now."""

    meta = RuleMeta(
        "NM132",
        "xm.get_rng_state() needs a human",
        safety=MANUAL,
        risks=frozenset({"rng"}),
        summary="xm.get_rng_state() returned an int seed; the torch.neuron RNG state is a tensor.",
        docs=(DOCS_MODULE,),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "state = xm.get_rng_state()\n"
            ),
            after=(
                "import torch_xla.core.xla_model as xm\n\n"
                "# TODO(neuron-migrate NM132): use `torch.neuron.get_rng_state()` (a state tensor, not the int "
                "seed xm.get_rng_state returned) and restore it with `torch.neuron.set_rng_state(state)`\n"
                "state = xm.get_rng_state()\n"
            ),
        ),
    )
    rows = ROWS
