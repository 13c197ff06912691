"""NM307: `neuron_config` of a compiled Neuron model"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import REVIEW, Edit, Example, RuleMeta, register
from neuron_migrate.rules.optimum_inference.common import DOCS_STATIC_SHAPES, DOCS_WHAT_CHANGES, OPTIMUM_TRIGGERS
from neuron_migrate.rules.optimum_inference.export_settings import ExportSettings
from neuron_migrate.rules.optimum_inference.loader_index import LOADER_REGISTRY, NEURON_CONFIG, Load
from neuron_migrate.rules.optimum_inference.loader_rule import NeuronLoaderRule


def _inner_attr(node: cst.Attribute) -> str:
    return node.value.attr.value if isinstance(node.value, cst.Attribute) else ""


@register
class CompiledModelSettings(NeuronLoaderRule):
    """``model.neuron_config`` held the settings a Neuron model was compiled with; a stock
    transformers model has no such attribute (AttributeError). A shape the load call spelled out as
    a number is that number now; anything else is for a human."""

    # Its TODO is about an attribute the optimum import made meaningful; a rerun, after that import went, keeps it.
    follow_up_todos = True

    meta = RuleMeta(
        "NM307",
        "`neuron_config` of a compiled Neuron model",
        safety=REVIEW,
        risks=frozenset({"performance"}),
        summary=(
            "`model.neuron_config.batch_size` (or sequence_length) becomes the number the load call compiled for; "
            "other uses of neuron_config get a TODO: the caller now chooses the shapes it pads to."
        ),
        docs=(DOCS_WHAT_CHANGES, DOCS_STATIC_SHAPES),
        triggers=OPTIMUM_TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron import NeuronModelForCausalLM\n\n"
                "model = NeuronModelForCausalLM.from_pretrained(model_id, export=True, batch_size=4)\n"
                "prompts = prompts[: model.neuron_config.batch_size]\n"
            ),
            after=(
                "from transformers import AutoModelForCausalLM\n\n"
                "# neuron-migrate(NM302): static KV cache: keep batch 4; for serving use vLLM's Neuron backend\n"
                'model = AutoModelForCausalLM.from_pretrained(model_id, device_map="neuron")\n'
                'model.generation_config.cache_implementation = "static"\n'
                "# neuron-migrate(NM307): 4 is the batch size the model was compiled for; a stock model has no "
                "neuron_config: keep it only as the shape you pad inputs to\n"
                "prompts = prompts[: 4]\n"
            ),
        ),
    )

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute):
        if not self.ctx.fact(LOADER_REGISTRY) or NEURON_CONFIG not in (original.attr.value, _inner_attr(original)):
            return updated
        index = self.index()
        found = index.neuron_configs.get(id(original))
        # Only where this file loaded a Neuron model that is now a stock one.
        if found is None or not any(load.migrates for load in index.loads.values()):
            return updated
        load, field_name = found
        value = self._compiled_value(load, field_name)
        if value is None:
            self.ctx.manual(
                self.meta,
                original,
                f"`{code_of(original)}` is gone: a stock model has no compiled settings; use the batch size and "
                "sequence length your inputs are padded to",
            )
            return updated
        review = (
            f"{value} is the {field_name.replace('_', ' ')} the model was compiled for; a stock model has no "
            "neuron_config: keep it only as the shape you pad inputs to"
        )
        note = f"{code_of(original)} -> {value} (the load call's {field_name})"
        return Edit(cst.Integer(value), message=note, review=review)

    @staticmethod
    def _compiled_value(load: Load | None, field_name: str | None) -> str | None:
        """The number the load call gave ``field_name`` (batch_size, sequence_length), if it did."""
        if load is None or field_name is None or load.reading is None:
            return None
        value = ExportSettings.read(load.reading).shapes.get(field_name)
        return value if value is not None and value.isdigit() else None
