"""NM213: `.trn_config` of Neuron training arguments"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules import hf_fields as hf
from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.optimum_training.common import DOCS_DISTRIBUTED, DOCS_DISTRIBUTED_CONFIG, STARTUP, TRIGGERS
from neuron_migrate.rules.optimum_training.script_scan import script_facts


@register
class TrnConfigAttribute(Rule):
    """``training_args.trn_config`` existed only on NeuronTrainingArguments / NeuronSFTConfig."""

    meta = RuleMeta(
        "NM213",
        "`.trn_config` of Neuron training arguments",
        safety=MANUAL,
        risks=frozenset({"collectives"}),
        summary=(
            "TrainingArguments has no trn_config; read only where the variable was built from a Neuron "
            "arguments class in the same file."
        ),
        docs=(DOCS_DISTRIBUTED_CONFIG, DOCS_DISTRIBUTED),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import os\n"
                "import torch\n"
                "from optimum.neuron import NeuronTrainingArguments\n\n"
                'training_args = NeuronTrainingArguments(output_dir="out", torch_compile=True)\n'
                "log(training_args.trn_config)\n"
            ),
            after=(
                "import os\n"
                "import torch\n"
                "from transformers import TrainingArguments\n\n"
                + STARTUP
                + 'training_args = TrainingArguments(output_dir="out", torch_compile=True)\n'
                "# TODO(neuron-migrate NM213): `training_args.trn_config` is gone: build "
                "DistributedConfig(tp_size=N) from your own settings and pass it to from_pretrained\n"
                "log(training_args.trn_config)\n"
            ),
        ),
    )
    follow_up_todos = True

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute):
        if original.attr.value != "trn_config" or not isinstance(original.value, cst.Name):
            return updated
        facts = script_facts(self.ctx)
        if original.value.value not in facts.args_names or id(original) in facts.skip_nodes:
            return updated
        receiver = facts.fields.receivers.get(id(original))
        if receiver:
            sizes = ", ".join(f"{size}={receiver}.{name}" for name, size in hf.PARALLEL_FIELDS.items())
            step = f"build DistributedConfig({sizes}) ({facts.fields.own_class} takes the sizes over)"
        else:
            step = "build DistributedConfig(tp_size=N) from your own settings"
        self.ctx.manual(self.meta, original, f"`{code_of(original)}` is gone: {step} and pass it to from_pretrained")
        return updated
