"""NM305: save_pretrained of a compiled Neuron model"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.optimum_inference.common import DOCS_WHAT_CHANGES, OPTIMUM_TRIGGERS
from neuron_migrate.rules.optimum_inference.loader_index import LOADER_REGISTRY
from neuron_migrate.rules.optimum_inference.loader_rule import NeuronLoaderRule


@register
class CompiledModelSave(NeuronLoaderRule):
    """``save_pretrained`` / ``push_to_hub`` on a model or pipeline loaded from optimum-neuron in this
    file saved the compiled artifact. Nothing is compiled ahead of time on TorchNeuron (Neuron docs:
    what changes), so what to save is a human's call."""

    meta = RuleMeta(
        "NM305",
        "save_pretrained of a compiled Neuron model",
        safety=MANUAL,
        risks=frozenset({"checkpoint-format"}),
        summary=(
            "The call saved the Neuron-compiled artifact for later loading. There is no such artifact now: "
            "keep the call only to save a plain checkpoint, or drop it."
        ),
        docs=(DOCS_WHAT_CHANGES,),
        triggers=OPTIMUM_TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron import NeuronModelForFeatureExtraction\n\n"
                'model = NeuronModelForFeatureExtraction.from_pretrained(model_id, export=True, batch_size=1, '
                "sequence_length=128)\n"
                'model.save_pretrained("bert_neuron/")\n'
            ),
            after=(
                "from transformers import AutoModel\n\n"
                "# neuron-migrate(NM301): inputs must keep these shapes: pad with padding=\"max_length\", "
                "max_length=128 and batch 1\n"
                'model = AutoModel.from_pretrained(model_id, device_map="neuron")\n'
                "# TODO(neuron-migrate NM305): this saved the Neuron-compiled model; nothing is compiled ahead of "
                "time now: drop it, or keep it to save a plain checkpoint\n"
                'model.save_pretrained("bert_neuron/")\n'
            ),
        ),
    )
    follow_up_todos = True

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        if not self.ctx.fact(LOADER_REGISTRY) or not isinstance(original.func, cst.Attribute):
            return updated
        if original.func.attr.value not in ("save_pretrained", "push_to_hub"):
            return updated
        load = self.index().methods.get(id(original))
        if load is not None and load.migrates:
            self.ctx.manual(
                self.meta,
                original,
                "this saved the Neuron-compiled model; nothing is compiled ahead of time now: drop it, or keep it to "
                "save a plain checkpoint",
            )
        return updated
