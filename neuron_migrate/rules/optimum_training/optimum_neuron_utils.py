"""NM229: optimum-neuron internal helper"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.optimum_training.common import DOCS_HF, TRIGGERS
from neuron_migrate.rules.tables.optimum_training import ROWS


@register
class OptimumNeuronUtils(Rule):
    """The rest of ``optimum.neuron.utils``: internal helpers of optimum-neuron, each with the next step."""

    meta = RuleMeta(
        "NM229",
        "optimum-neuron internal helper",
        safety=MANUAL,
        summary=(
            "Constants, dummy-input generators, export arguments, patching and availability helpers of "
            "optimum.neuron.utils (and trainers.TRL_VERSION): deleted by hand or replaced by the stock helper "
            "named in the TODO."
        ),
        docs=(DOCS_HF,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron.utils import NEURON_FILE_NAME\n\n"
                "compiled = os.path.join(output_dir, NEURON_FILE_NAME)\n"
            ),
            after=(
                "from optimum.neuron.utils import NEURON_FILE_NAME\n\n"
                "# TODO(neuron-migrate NM229): NEURON_FILE_NAME is an optimum-neuron helper: it names compiled "
                "artifacts TorchNeuron does not write: delete this use\n"
                "compiled = os.path.join(output_dir, NEURON_FILE_NAME)\n"
            ),
        ),
    )
    rows = ROWS
