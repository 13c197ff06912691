"""NM204: NeuronSFTConfig -> trl.SFTConfig"""

from __future__ import annotations

from neuron_migrate.rules.base import REVIEW, Example, RuleMeta, register
from neuron_migrate.rules.optimum_training.arguments import ArgumentsRule
from neuron_migrate.rules.optimum_training.common import (
    DOCS_COMPILE,
    DOCS_DISTRIBUTED_CONFIG,
    DOCS_SFT,
    STARTUP,
    TRIGGERS,
)
from neuron_migrate.rules.tables.optimum_training import ROWS


@register
class NeuronSFTConfigToSFTConfig(ArgumentsRule):
    """NeuronSFTConfig -> trl.SFTConfig: the TrainingArguments field map plus what NeuronSFTConfig forced
    (``padding_free=False``, ``max_seq_length`` -> ``max_length``), and static shapes."""

    meta = RuleMeta(
        "NM204",
        "NeuronSFTConfig -> trl.SFTConfig",
        safety=REVIEW,
        risks=frozenset({"numerics", "performance", "collectives"}),
        summary=(
            "Same field map as NM202; max_seq_length becomes max_length and padding_free is set (or added) "
            "False as NeuronSFTConfig forced it. A literal tensor_parallel_size moves into model_init_kwargs as a "
            "DistributedConfig. Review markers ask for pad_to_multiple_of (optimum-neuron padded to "
            "max_length) and flag bfd packing, which makes shapes vary."
        ),
        docs=(DOCS_SFT, DOCS_COMPILE, DOCS_DISTRIBUTED_CONFIG),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import os\n"
                "import torch\n"
                "from optimum.neuron import NeuronSFTConfig\n\n"
                'config = NeuronSFTConfig(output_dir="out", max_seq_length=1024, pad_to_multiple_of=1024)\n'
            ),
            after=(
                "import os\n"
                "import torch\n"
                "from trl import SFTConfig\n\n"
                + STARTUP
                + 'config = SFTConfig(output_dir="out", max_length=1024, pad_to_multiple_of=1024, '
                'torch_compile=True, torch_compile_backend="neuron", padding_free=False)\n'
            ),
        ),
    )
    rows = ROWS
