"""NM203: NeuronSFTTrainer -> trl.SFTTrainer"""

from __future__ import annotations

from neuron_migrate.rules.base import SAFE, Example, RuleMeta, register
from neuron_migrate.rules.optimum_training.common import DOCS_HF, DOCS_SFT, STARTUP, TRIGGERS
from neuron_migrate.rules.optimum_training.stock_class import TrainerRule
from neuron_migrate.rules.tables.optimum_training import ROWS


@register
class NeuronSFTTrainerToSFTTrainer(TrainerRule):
    """NeuronSFTTrainer -> trl.SFTTrainer: same arguments."""

    meta = RuleMeta(
        "NM203",
        "NeuronSFTTrainer -> trl.SFTTrainer",
        safety=SAFE,
        summary="trl.SFTTrainer takes the same arguments; tokenizer= becomes processing_class=.",
        docs=(DOCS_SFT, DOCS_HF),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import os\n"
                "import torch\n"
                "from optimum.neuron import NeuronSFTTrainer\n\n"
                "trainer = NeuronSFTTrainer(model, args=config, train_dataset=data, peft_config=lora)\n"
            ),
            after=(
                "import os\n"
                "import torch\n"
                "from trl import SFTTrainer\n\n"
                + STARTUP
                + "trainer = SFTTrainer(model, args=config, train_dataset=data, peft_config=lora)\n"
            ),
        ),
    )
    rows = ROWS
