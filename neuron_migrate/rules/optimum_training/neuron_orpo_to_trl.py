"""NM205: NeuronORPOTrainer / NeuronORPOConfig -> TRL ORPO"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules import hf_fields as hf
from neuron_migrate.rules.base import REVIEW, Example, RuleMeta, register
from neuron_migrate.rules.optimum_training.arguments import ArgumentsRule
from neuron_migrate.rules.optimum_training.classes import Target
from neuron_migrate.rules.optimum_training.common import DOCS_HF, DOCS_ORPO, STARTUP, TRIGGERS
from neuron_migrate.rules.optimum_training.stock_class import REPORTED_DISAGREEMENTS, TrainerRule
from neuron_migrate.rules.tables.optimum_training import ROWS


@register
class NeuronOrpoToTrl(ArgumentsRule, TrainerRule):
    """optimum-neuron <= 0.3 NeuronORPOTrainer / NeuronORPOConfig -> TRL's ORPOTrainer / ORPOConfig."""

    meta = RuleMeta(
        "NM205",
        "NeuronORPOTrainer / NeuronORPOConfig -> TRL ORPO",
        safety=REVIEW,
        risks=frozenset({"numerics", "performance"}),
        summary=(
            "ORPO moved to trl.experimental.orpo in TRL 0.25 (picked by the installed release); the config "
            "gets the TrainingArguments field map of NM202."
        ),
        docs=(DOCS_ORPO, DOCS_HF),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import os\n"
                "import torch\n"
                "from optimum.neuron import NeuronORPOTrainer\n\n"
                "trainer = NeuronORPOTrainer(model=model, args=config, train_dataset=pairs, tokenizer=tok)\n"
            ),
            after=(
                "import os\n"
                "import torch\n"
                "from trl.experimental.orpo import ORPOTrainer\n\n"
                + STARTUP
                + "trainer = ORPOTrainer(model=model, args=config, train_dataset=pairs, processing_class=tok)\n"
            ),
        ),
    )
    rows = ROWS
    current: cst.CSTNode | None = None

    def apply_row(self, original, updated, qname):
        """The config's call gets the field map, the trainer's its trainer edits, any other use a rename."""
        if not isinstance(original, cst.Call):
            return self.rename_reference(original, updated, qname)
        if self.twins[qname].owner:
            return self.config_call(original, updated, qname)
        return self.trainer_call(original, updated, qname)

    def stock_name(self, target: Target) -> str:
        return self.ctx.require_from_import(self.module_of(target), target.name)

    def module_of(self, target: Target) -> str:
        return "trl.experimental.orpo" if self.orpo_is_experimental() else "trl"

    def orpo_is_experimental(self) -> bool:
        """TRL 0.25 moved ORPO to trl.experimental.orpo: the version table, checked against the installed
        package when there is one."""
        table = bool(hf.table_says("trl", "experimental.orpo"))
        if hf.installed_version("trl") is None:
            return table
        real = hf.installed_fields("ORPOConfig") is not None
        reported = self.ctx.fact(REPORTED_DISAGREEMENTS)
        if real != table and ("trl", "experimental.orpo") not in reported:
            reported.add(("trl", "experimental.orpo"))
            where = "has" if real else "has no"
            self.ctx.report(
                self.meta, self.current,
                f"the version table disagrees with the installed {hf.version_text('trl')}, which {where} "
                "trl.experimental.orpo; following the installed release",
            )
        return real

    def trainer_call(self, original, updated, qname):
        self.current = original
        return TrainerRule.rename_call(self, original, updated, qname)

    def config_call(self, original, updated, qname):
        self.current = original
        return ArgumentsRule.rename_call(self, original, updated, qname)

    def rename_reference(self, original, updated, qname):
        self.current = original
        return super().rename_reference(original, updated, qname)

    def subclass_review(self, target: Target) -> str:
        return f"check the methods and fields this subclass overrides against trl's {target.name}"
