"""NM301: NeuronModelFor<Task>.from_pretrained -> AutoModelFor<Task>.from_pretrained(device_map="neuron")"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import REVIEW, Edit, Example, RuleMeta, register
from neuron_migrate.rules.optimum_inference.common import (
    DOCS_HF_NATIVE,
    DOCS_STATIC_SHAPES,
    DOCS_WHAT_CHANGES,
    OPTIMUM_TRIGGERS,
    TASK_MODEL_TARGETS,
)
from neuron_migrate.rules.optimum_inference.model_loading import TransformersModelRule, _class_calls
from neuron_migrate.rules.optimum_names import with_methods


@register
class TaskModelToTransformers(TransformersModelRule):
    """``NeuronModelFor<Task>`` and the model-specific ``NeuronBert*``/``NeuronCLIP*``/... -> the
    transformers ``AutoModelFor<Task>`` / model class, loaded on ``device_map="neuron"`` (TorchNeuron
    runs stock Transformers: Neuron docs, TorchNeuron resources)."""

    meta = RuleMeta(
        "NM301",
        "NeuronModelFor<Task>.from_pretrained -> AutoModelFor<Task>.from_pretrained(device_map=\"neuron\")",
        safety=REVIEW,
        risks=frozenset({"numerics", "performance", "checkpoint-format"}),
        summary=(
            "The stock transformers class loads the original checkpoint on the neuron device and compiles as it "
            "runs. export= and compiler flags are dropped; auto_cast_type becomes dtype=; num_cores / "
            "tensor_parallel_size becomes DistributedConfig(tp_size=N); the compiled input shapes become a "
            "padding promise named in the marker."
        ),
        docs=(DOCS_HF_NATIVE, DOCS_WHAT_CHANGES, DOCS_STATIC_SHAPES),
        triggers=OPTIMUM_TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron import NeuronModelForSequenceClassification\n\n"
                "model = NeuronModelForSequenceClassification.from_pretrained(\n"
                '    "distilbert-base-uncased-finetuned-sst-2-english",\n'
                "    export=True,\n"
                "    batch_size=1,\n"
                "    sequence_length=128,\n"
                '    auto_cast="matmul",\n'
                '    auto_cast_type="bf16",\n'
                ")\n"
            ),
            after=(
                "import torch\n"
                "from transformers import AutoModelForSequenceClassification\n\n"
                "# neuron-migrate(NM301): weights now load in torch.bfloat16 (auto_cast cast only matmuls): check "
                'accuracy; inputs must keep these shapes: pad with padding="max_length", max_length=128 and batch 1\n'
                "model = AutoModelForSequenceClassification.from_pretrained(\n"
                '    "distilbert-base-uncased-finetuned-sst-2-english",\n'
                "    dtype=torch.bfloat16,\n"
                '    device_map="neuron",\n'
                ")\n"
            ),
        ),
    )
    targets = TASK_MODEL_TARGETS
    loads = dict.fromkeys(with_methods(tuple(TASK_MODEL_TARGETS), "from_pretrained"), "load")
    calls = {**_class_calls(TASK_MODEL_TARGETS), **loads}
    references = dict.fromkeys(TASK_MODEL_TARGETS, "reference")

    def load(self, original: cst.Call, updated: cst.Call, qname: str):
        migrated = self.migrate_load(original, updated, qname)
        if migrated is None:
            return updated
        new, migration = migrated
        review = "; ".join(migration.review) or 'pad inputs to fixed shapes (padding="max_length")'
        return Edit(new, message=migration.message, review=review)
