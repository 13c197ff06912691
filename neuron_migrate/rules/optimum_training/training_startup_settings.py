"""NM217: TorchNeuron training start-up settings"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import root_name
from neuron_migrate.rules.base import SAFE, Example, Rule, RuleMeta, register
from neuron_migrate.rules.optimum_training.classes import ARGUMENT_CLASSES, PARSER_NAMES, TRAINING_BUILDERS
from neuron_migrate.rules.optimum_training.common import (
    ASYNC_LOAD_WHY,
    DOCS_COMPILE,
    DOCS_FINE_TUNING,
    DYNAMIC_SHAPES_WHY,
    STARTUP,
    TRIGGERS,
)
from neuron_migrate.rules.optimum_training.script_facts import _callee_name


@register
class TrainingStartupSettings(Rule):
    """Two settings the Hugging Face TorchNeuron recipe puts at the top of a training script, added once to a
    file that builds a trainer or its arguments from a legacy class."""

    meta = RuleMeta(
        "NM217",
        "TorchNeuron training start-up settings",
        safety=SAFE,
        risks=frozenset({"performance"}),
        summary=(
            "torch._dynamo.config.automatic_dynamic_shapes = False (one graph per shape, no symbolic dims) "
            'and os.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1"), unless the file already sets them.'
        ),
        docs=(DOCS_COMPILE, DOCS_FINE_TUNING),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import os\n"
                "import torch\n"
                "from optimum.neuron import NeuronTrainer\n\n"
                "trainer = NeuronTrainer(model=model, args=args)\n"
            ),
            after=(
                "import os\n"
                "import torch\n"
                "from transformers import Trainer\n\n" + STARTUP + "trainer = Trainer(model=model, args=args)\n"
            ),
        ),
    )

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        if not self.builds_training(original):
            return updated
        torch = self.ctx.require_import("torch")
        os_name = self.ctx.require_import("os")
        self.ctx.add_setup(
            self.meta,
            original,
            f"{torch}._dynamo.config.automatic_dynamic_shapes = False",
            DYNAMIC_SHAPES_WHY,
            unless="automatic_dynamic_shapes",
        )
        self.ctx.add_setup(
            self.meta,
            original,
            f'{os_name}.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1")',
            ASYNC_LOAD_WHY,
            unless="HF_DEACTIVATE_ASYNC_LOAD",
        )
        return updated

    def builds_training(self, call: cst.Call) -> bool:
        if root_name(call.func) not in self.ctx.import_bound and _callee_name(call.func) not in PARSER_NAMES:
            return False
        if self.ctx.any_qualified_name(call.func, TRAINING_BUILDERS):
            return True
        if _callee_name(call.func) in PARSER_NAMES and call.args:
            first = call.args[0].value
            elements = [e.value for e in first.elements] if isinstance(first, (cst.Tuple, cst.List)) else [first]
            return any(self.ctx.any_qualified_name(e, ARGUMENT_CLASSES) for e in elements)
        return False
