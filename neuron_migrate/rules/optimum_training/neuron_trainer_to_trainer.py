"""NM201: NeuronTrainer -> transformers.Trainer"""

from __future__ import annotations

from neuron_migrate.rules.base import SAFE, Example, RuleMeta, register
from neuron_migrate.rules.optimum_training.common import DOCS_FINE_TUNING, DOCS_HF, STARTUP, TRIGGERS
from neuron_migrate.rules.optimum_training.stock_class import TrainerRule
from neuron_migrate.rules.tables.optimum_training import ROWS


@register
class NeuronTrainerToTrainer(TrainerRule):
    """NeuronTrainer ran its own XLA training loop; transformers.Trainer drives the neuron device
    itself (TrainingArguments picks ``neuron`` and torch.compile's neuron backend). Docs: D18/D19."""

    meta = RuleMeta(
        "NM201",
        "NeuronTrainer -> transformers.Trainer",
        safety=SAFE,
        summary=(
            "Trainer takes the same arguments (tokenizer= becomes processing_class=); subclasses get a review "
            "marker to check their overrides. Seq2SeqNeuronTrainer becomes Seq2SeqTrainer."
        ),
        docs=(DOCS_HF, DOCS_FINE_TUNING),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import os\n"
                "import torch\n"
                "from optimum.neuron import NeuronTrainer\n\n"
                "trainer = NeuronTrainer(model=model, args=args, train_dataset=data, tokenizer=tokenizer)\n"
            ),
            after=(
                "import os\n"
                "import torch\n"
                "from transformers import Trainer\n\n"
                + STARTUP
                + "trainer = Trainer(model=model, args=args, train_dataset=data, processing_class=tokenizer)\n"
            ),
        ),
    )
    rows = ROWS
