"""NM206: NeuronHfArgumentParser -> transformers.HfArgumentParser"""

from __future__ import annotations

from neuron_migrate.rules.base import SAFE, Edit, Example, register, RuleMeta
from neuron_migrate.rules.optimum_training.common import DOCS_HF, DOCS_TRAINING_ARGS, PARSERS, TRIGGERS, RenameRule


@register
class NeuronHfArgumentParserToHfArgumentParser(RenameRule):
    """NeuronHfArgumentParser only patched the Neuron dataclasses in; HfArgumentParser parses the stock ones."""

    meta = RuleMeta(
        "NM206",
        "NeuronHfArgumentParser -> transformers.HfArgumentParser",
        safety=SAFE,
        summary="HfArgumentParser parses the stock TrainingArguments / SFTConfig dataclasses the same way.",
        docs=(DOCS_TRAINING_ARGS, DOCS_HF),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron import NeuronHfArgumentParser\n\n"
                "parser = NeuronHfArgumentParser((ScriptArguments,))\n"
            ),
            after=("from transformers import HfArgumentParser\n\nparser = HfArgumentParser((ScriptArguments,))\n"),
        ),
    )
    targets = PARSERS
    calls, references = RenameRule.tables(PARSERS, "rename_call")

    def rename_call(self, original, updated, qname):
        renamed = updated.with_changes(func=self.ctx.expr(self.stock_name(self.targets[qname])))
        return Edit(renamed, message="NeuronHfArgumentParser -> transformers.HfArgumentParser")
