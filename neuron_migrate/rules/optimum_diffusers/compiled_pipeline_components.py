"""NM322: compiled diffusion pipeline components -> the stock component classes"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import REVIEW, Edit, Example, register, RuleMeta
from neuron_migrate.rules.optimum_diffusers.common import COMPONENTS, COMPONENT_NAMES
from neuron_migrate.rules.optimum_inference.common import DOCS_HF_NATIVE, OPTIMUM_TRIGGERS
from neuron_migrate.rules.optimum_inference.loader_rule import ANNOTATION, ISINSTANCE, NeuronLoaderRule


@register
class CompiledPipelineComponents(NeuronLoaderRule):
    """The compiled components of a Neuron pipeline (``pipe.unet`` was a ``NeuronModelUnet``). A stock
    diffusers pipeline holds the stock models there, so a type check names that class; the split
    VAE encoder / decoder have no counterpart (one ``pipe.vae`` does both)."""

    meta = RuleMeta(
        "NM322",
        "compiled diffusion pipeline components -> the stock component classes",
        safety=REVIEW,
        risks=frozenset({"checkpoint-format"}),
        summary=(
            "In isinstance checks and annotations, NeuronModelUnet becomes UNet2DConditionModel, the text / image "
            "encoders PreTrainedModel, the controlnets ControlNetModel / MultiControlNetModel, NeuronModelTransformer "
            "ModelMixin; the VAE encoder and decoder get a TODO (the stock pipeline has one `vae`)."
        ),
        docs=(DOCS_HF_NATIVE, "https://huggingface.co/docs/diffusers/api/pipelines/overview"),
        triggers=OPTIMUM_TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron.modeling_diffusion import NeuronModelUnet\n\n\n"
                "def check(pipe):\n"
                "    assert isinstance(pipe.unet, NeuronModelUnet)\n"
            ),
            after=(
                "from diffusers import UNet2DConditionModel\n\n\n"
                "def check(pipe):\n"
                "    # neuron-migrate(NM322): NeuronModelUnet was the compiled unet; a stock pipeline's unet is a "
                "UNet2DConditionModel\n"
                "    assert isinstance(pipe.unet, UNet2DConditionModel)\n"
            ),
        ),
    )
    references = dict.fromkeys(COMPONENT_NAMES, "component")

    def component(self, original: cst.CSTNode, updated: cst.CSTNode, qname: str):
        name = COMPONENT_NAMES[qname]
        role, module, stock = COMPONENTS[name]
        if module is None:
            self.ctx.manual(
                self.meta,
                original,
                f"{name} was the compiled {role}; a stock pipeline has one `pipe.vae` (AutoencoderKL) that encodes "
                "and decodes: check that instead",
            )
            return updated
        if self.context_of(original) not in (ISINSTANCE, ANNOTATION):
            self.ctx.manual(
                self.meta, original, f"{name} was the compiled {role}: use the stock pipeline's {role} ({stock})"
            )
            return updated
        review = f"{name} was the compiled {role}; a stock pipeline's {role} is a {stock}"
        stock_name = self.ctx.expr(self.ctx.require_from_import(module, stock))
        return Edit(stock_name, message=f"{name} -> {module}.{stock}", review=review)
