"""NM221: fields of the Neuron training arguments that the stock class lacks, read after the migration"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules import hf_fields as hf
from neuron_migrate.rules.base import SAFE, Edit, Example, Rule, RuleMeta, register
from neuron_migrate.rules.optimum_training.common import (
    DOCS_DISTRIBUTED_CONFIG,
    DOCS_SFT,
    DOCS_TRAINING_ARGS,
    STARTUP,
    TRIGGERS,
)
from neuron_migrate.rules.optimum_training.script_scan import script_facts

TAKEN_OVER_WHY = "Neuron-only training arguments this script still reads ({stock} lacks them): their flags parse here"


@register
class ArgumentFieldReads(Rule):
    """After the migration the parsed or built arguments are a stock ``TrainingArguments`` / ``SFTConfig``:
    a read of a field it lacks fails at start-up, so none is left behind (plan in
    :mod:`~neuron_migrate.rules.optimum_training.field_reads`)."""

    meta = RuleMeta(
        "NM221",
        "field of the Neuron training arguments that the stock class lacks, read",
        safety=SAFE,
        risks=frozenset({"launch", "collectives"}),
        summary=(
            "training_args.max_seq_length of an SFTConfig reads max_length. A Neuron-only field (tensor_parallel_size, "
            "zero_1, ...) of arguments parsed next to the script's own dataclass moves into that dataclass, so its "
            "command-line flag still parses, and the read goes there (script_args.tensor_parallel_size); of arguments "
            "built in the file it is the value they were built with. Any other such read gets a TODO."
        ),
        docs=(DOCS_TRAINING_ARGS, DOCS_SFT, DOCS_DISTRIBUTED_CONFIG),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from dataclasses import dataclass\n\n"
                "from optimum.neuron import NeuronHfArgumentParser, NeuronTrainingArguments\n\n\n"
                "@dataclass\n"
                "class ScriptArguments:\n"
                '    model_id: str = "llama"\n\n\n'
                "def train(script_args, training_args):\n"
                "    if training_args.tensor_parallel_size > 1:\n"
                '        print("sharded")\n\n\n'
                "parser = NeuronHfArgumentParser((ScriptArguments, NeuronTrainingArguments))\n"
                "script_args, training_args = parser.parse_args_into_dataclasses()\n"
                "train(script_args, training_args)\n"
            ),
            after=(
                "from dataclasses import dataclass\n"
                "import os\n"
                "import torch\n"
                "from transformers import HfArgumentParser, TrainingArguments\n\n"
                + STARTUP
                + "\n@dataclass\n"
                "class ScriptArguments:\n"
                '    model_id: str = "llama"\n'
                f"    # {TAKEN_OVER_WHY.format(stock='TrainingArguments')}\n"
                "    tensor_parallel_size: int = 1\n\n\n"
                "def train(script_args, training_args):\n"
                "    if script_args.tensor_parallel_size > 1:\n"
                '        print("sharded")\n\n\n'
                "# neuron-migrate(NM202): command-line flags of the other Neuron-only fields are gone, ScriptArguments "
                "takes --tensor_parallel_size over; pass --torch_compile true --torch_compile_backend neuron\n"
                "parser = HfArgumentParser((ScriptArguments, TrainingArguments))\n"
                "script_args, training_args = parser.parse_args_into_dataclasses()\n"
                "train(script_args, training_args)\n"
            ),
        ),
    )
    # Its TODOs are about arguments the migration changed: the next run cannot tell them from others.
    follow_up_todos = True

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute):
        facts = script_facts(self.ctx)
        read = facts.fields.reads.get(id(original))
        if read is None:
            return updated
        if read.todo:
            if id(original) not in facts.lazy_args:  # NM214 says it where the read goes
                self.ctx.manual(self.meta, original, read.todo)
            return updated
        return Edit(cst.parse_expression(read.code), message=read.note, safe=True)

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef):
        plan = script_facts(self.ctx).fields
        if not plan.missing or original.name.value != plan.own_class:
            return updated
        if not any(statement is original for statement in self.ctx.module.body):
            return updated
        if not isinstance(updated.body, cst.IndentedBlock):
            return updated
        lines = []
        for name in plan.missing:
            annotation, default = hf.NEURON_FIELD_DECLARATIONS[name]
            lines.append(cst.parse_statement(f"{name}: {annotation} = {default}\n"))
        why = cst.EmptyLine(comment=cst.Comment(f"# {TAKEN_OVER_WHY.format(stock=plan.stock)}"))
        lines[0] = lines[0].with_changes(leading_lines=[why])
        body = updated.body.with_changes(body=[*updated.body.body, *lines])
        fields = ", ".join(plan.missing)
        if len(plan.missing) == 1:
            message = f"{plan.own_class} takes over {fields}, which the script reads: its flag still parses"
        else:
            message = f"{plan.own_class} takes over {fields}, which the script reads: their flags still parse"
        return Edit(updated.with_changes(body=body), message=message, safe=True)
