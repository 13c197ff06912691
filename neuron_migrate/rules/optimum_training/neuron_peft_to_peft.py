"""NM208: optimum.neuron.peft -> peft"""

from __future__ import annotations

from neuron_migrate.rules.base import SAFE, Edit, Example, register, RuleMeta
from neuron_migrate.rules.optimum_training.common import DOCS_HF, DOCS_PEFT, PEFT, TRIGGERS, RenameRule


@register
class NeuronPeftToPeft(RenameRule):
    """optimum.neuron.peft wrapped PEFT for its parallel layers; stock PEFT works on TorchNeuron."""

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
    targets = PEFT
    calls, references = RenameRule.tables(PEFT, "rename_call", methods=("from_pretrained",))

    def rename_call(self, original, updated, qname):
        message = f"{qname.rsplit('.', 1)[1]} -> peft.{self.targets[qname].name}"
        return Edit(updated.with_changes(func=self.ctx.expr(self.stock_name(self.targets[qname]))), message=message)
