"""NM206: NeuronHfArgumentParser -> transformers.HfArgumentParser"""

from __future__ import annotations

from neuron_migrate.rules.base import SAFE, Example, Rule, RuleMeta, register
from neuron_migrate.rules.optimum_training.common import DOCS_HF, DOCS_TRAINING_ARGS, TRIGGERS
from neuron_migrate.rules.tables.optimum_training import ROWS


@register
class NeuronHfArgumentParserToHfArgumentParser(Rule):
    """NeuronHfArgumentParser only patched the Neuron dataclasses in; HfArgumentParser parses the stock ones.
    A plain rename: the rows answer every use."""

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
    rows = ROWS
