"""NM208: optimum.neuron.peft -> peft"""

from __future__ import annotations

from neuron_migrate.rules.base import SAFE, Example, RuleMeta, register
from neuron_migrate.rules.optimum_training.common import DOCS_HF, DOCS_PEFT, TRIGGERS
from neuron_migrate.rules.optimum_training.stock_class import StockClassRule
from neuron_migrate.rules.tables.optimum_training import ROWS


@register
class NeuronPeftToPeft(StockClassRule):
    """optimum.neuron.peft wrapped PEFT for its parallel layers; stock PEFT works on TorchNeuron. Its rows
    rename every use; ``NeuronPeftModel.from_pretrained(...)`` renames the class of the call."""

    meta = RuleMeta(
        "NM208",
        "optimum.neuron.peft -> peft",
        safety=SAFE,
        summary="get_peft_model, NeuronPeftModel and NeuronPeftModelForCausalLM become their peft originals.",
        docs=(DOCS_PEFT, DOCS_HF),
        triggers=TRIGGERS,
        example=Example(
            before=("from optimum.neuron.peft import get_peft_model\n\nmodel = get_peft_model(model, lora_config)\n"),
            after=("import peft\n\nmodel = peft.get_peft_model(model, lora_config)\n"),
        ),
    )
    rows = ROWS
    row_methods = ("from_pretrained",)
