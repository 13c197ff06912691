"""NM321: optimum-neuron diffusion pipeline mixins"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.optimum_inference.common import DOCS_HF_NATIVE, OPTIMUM_TRIGGERS
from neuron_migrate.rules.tables.optimum_diffusers import ROWS


@register
class PipelineMixinRemoval(Rule):
    """The optimum-neuron pipeline mixins adapted diffusers' pipelines to compiled models; the stock
    pipeline classes already have that behaviour (Diffusers on TorchNeuron: Neuron docs)."""

    meta = RuleMeta(
        "NM321",
        "optimum-neuron diffusion pipeline mixins",
        safety=MANUAL,
        risks=frozenset({"performance"}),
        summary="No counterpart: subclass (or use) the stock diffusers pipeline that the mixin adapted.",
        docs=(DOCS_HF_NATIVE,),
        triggers=OPTIMUM_TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron.pipelines import NeuronStableDiffusionXLPipelineMixin\n\n"
                "class MyPipeline(NeuronStableDiffusionXLPipelineMixin, Base):\n"
                "    pass\n"
            ),
            after=(
                "from optimum.neuron.pipelines import NeuronStableDiffusionXLPipelineMixin\n\n"
                "# TODO(neuron-migrate NM321): NeuronStableDiffusionXLPipelineMixin adapted diffusers to compiled "
                "models: drop it and build on diffusers' StableDiffusionXLPipeline\n"
                "class MyPipeline(NeuronStableDiffusionXLPipelineMixin, Base):\n"
                "    pass\n"
            ),
        ),
    )
    rows = ROWS
