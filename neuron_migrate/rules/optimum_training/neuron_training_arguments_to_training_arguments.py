"""NM202: NeuronTrainingArguments -> transformers.TrainingArguments"""

from __future__ import annotations

from neuron_migrate.rules.base import REVIEW, Example, RuleMeta, register
from neuron_migrate.rules.optimum_training.arguments import ArgumentsRule
from neuron_migrate.rules.optimum_training.common import (
    DOCS_COMPILE,
    DOCS_DISTRIBUTED_CONFIG,
    DOCS_TRAINING_ARGS,
    STARTUP,
    TRIGGERS,
)
from neuron_migrate.rules.tables.optimum_training import ROWS


@register
class NeuronTrainingArgumentsToTrainingArguments(ArgumentsRule):
    """NeuronTrainingArguments (0.4.5: a standalone dataclass) -> transformers.TrainingArguments, field
    by field (hf_fields); the step is compiled with ``torch_compile_backend="neuron"``."""

    meta = RuleMeta(
        "NM202",
        "NeuronTrainingArguments -> transformers.TrainingArguments",
        safety=REVIEW,
        risks=frozenset({"numerics", "performance", "collectives"}),
        summary=(
            'Shared fields are kept and torch_compile=True, torch_compile_backend="neuron" added. Neuron-only '
            "fields are dropped; tensor/pipeline parallel sizes become DistributedConfig where the model is "
            "built; zero_1 and full-bf16 precision get a review marker. warmup_ratio, logging_dir and "
            "overwrite_output_dir follow the installed transformers release. Defaults that differ "
            "(average_tokens_across_devices, report_to, log_level) are not pinned."
        ),
        docs=(DOCS_TRAINING_ARGS, DOCS_COMPILE, DOCS_DISTRIBUTED_CONFIG),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import os\n"
                "import torch\n"
                "from optimum.neuron import NeuronTrainingArguments\n\n"
                "args = NeuronTrainingArguments(\n"
                '    output_dir="out",\n'
                "    per_device_train_batch_size=2,\n"
                "    skip_cache_push=True,\n"
                ")\n"
            ),
            after=(
                "import os\n"
                "import torch\n"
                "from transformers import TrainingArguments\n\n" + STARTUP + "args = TrainingArguments(\n"
                '    output_dir="out",\n'
                "    per_device_train_batch_size=2,\n"
                "    torch_compile=True,\n"
                '    torch_compile_backend="neuron",\n'
                ")\n"
            ),
        ),
    )
    follow_up_todos = True
    rows = ROWS
