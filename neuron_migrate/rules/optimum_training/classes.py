"""The legacy training classes and their stock twins, as the rules and the file scan see them.

Which stock class a legacy name becomes is one row each in ``rules/tables/optimum_training.py``
(``STOCK_TWINS``); this module adds what code needs to rewrite a call of the class (the hf_fields key
of its fields, the legacy positional parameters) and the name sets the scan and several rules read:
which calls build a training script's arguments, which load a training model, which take a trn_config.
"""

from __future__ import annotations

from dataclasses import dataclass

from neuron_migrate.rules import hf_fields as hf
from neuron_migrate.rules.optimum_names import optimum_names
from neuron_migrate.rules.rows import Row
from neuron_migrate.rules.tables.optimum_training import MODEL_CLASSES, STOCK_TWINS, TRAINING_MODELS_PACKAGE


@dataclass(frozen=True)
class Target:
    """A stock replacement: ``from module import name``; ``owner`` keys its fields in hf_fields."""

    module: str
    name: str
    owner: str = ""
    sft: bool = False
    # The legacy positional parameters, when known: positionals past ``keep`` become keywords.
    legacy_params: tuple[str, ...] = ()
    keep: int = 0


@dataclass(frozen=True)
class CallShape:
    """How a call of the legacy class is rewritten: ``owner`` keys the stock class's fields in hf_fields
    (an arguments class), ``sft`` adds SFTConfig's own fields, positionals past ``keep`` become keywords
    named by ``legacy_params``."""

    owner: str = ""
    sft: bool = False
    legacy_params: tuple[str, ...] = ()
    keep: int = 0


NEURON_TRAINER_PARAMS = (
    "model", "args", "data_collator", "train_dataset", "eval_dataset", "processing_class", "callbacks",
    "optimizers", "optimizer_cls_and_kwargs", "tokenizer",
)  # fmt: skip
NEURON_SFT_TRAINER_PARAMS = (
    "model", "args", "data_collator", "train_dataset", "eval_dataset", "processing_class", "compute_loss_func",
    "compute_metrics", "callbacks", "optimizers", "optimizer_cls_and_kwargs", "preprocess_logits_for_metrics",
    "peft_config", "formatting_func",
)  # fmt: skip
# Stock twin (as its row names it) -> how the call of its legacy class is rewritten; a twin not listed
# keeps the call's arguments as they are.
CALL_SHAPES = {
    "transformers.Trainer": CallShape(legacy_params=NEURON_TRAINER_PARAMS, keep=6),
    "transformers.Seq2SeqTrainer": CallShape(keep=6),
    "trl.SFTTrainer": CallShape(legacy_params=NEURON_SFT_TRAINER_PARAMS, keep=12),
    "transformers.TrainingArguments": CallShape(
        "TrainingArguments", legacy_params=hf.NEURON_ARGUMENT_ORDER, keep=1
    ),
    "transformers.Seq2SeqTrainingArguments": CallShape("Seq2SeqTrainingArguments", keep=1),
    "trl.SFTConfig": CallShape("SFTConfig", sft=True, keep=1),
    "trl.experimental.orpo.ORPOTrainer": CallShape(keep=6),
    "trl.experimental.orpo.ORPOConfig": CallShape("ORPOConfig", keep=1),
}


def target_of(row: Row) -> Target:
    """The stock class a twin row (a Rename) names, with the shape of its call."""
    stock = row.action.target
    module, _, name = stock.rpartition(".")
    shape = CALL_SHAPES.get(stock, CallShape())
    return Target(module, name, shape.owner, shape.sft, shape.legacy_params, shape.keep)


def twins_of(*rules: str) -> dict[str, Target]:
    """Every import path of the legacy names the ``rules`` rename -> its stock twin."""
    return {row.name: target_of(row) for row in STOCK_TWINS if row.rule in rules}


# The arguments classes (their twin has fields) and every class whose construction makes a file a
# Trainer-based training script.
ARGUMENT_CLASSES = {qname: target for qname, target in twins_of("NM202", "NM204", "NM205").items() if target.owner}
TRAINING_BUILDERS = frozenset({*twins_of("NM201", "NM203", "NM205"), *ARGUMENT_CLASSES})
ACCELERATE = twins_of("NM207")
PARSER_NAMES = hf.PARSER_NAMES
PARSE_METHODS = hf.PARSE_METHODS
FROM_PRETRAINED = {f"{qname}.from_pretrained": stock for qname, stock in MODEL_CLASSES.items()}
TRN_CONFIG = frozenset(
    optimum_names("TrainingNeuronConfig", TRAINING_MODELS_PACKAGE, "models.training.config", top_level=False)
)
LAZY_LOAD = frozenset(optimum_names("lazy_load_for_parallelism", "distributed", "distributed.utils", top_level=False))
# NeuronAccelerator keyword arguments with no Accelerator counterpart.
ACCELERATOR_ONLY = {
    "trn_config": "tensor parallelism comes from the model: from_pretrained(..., distributed_config=DistributedConfig(tp_size=N))",
    "mp_plugin": "tensor parallelism comes from the model: from_pretrained(..., distributed_config=DistributedConfig(tp_size=N))",
}
