"""optimum-neuron's diffusion pipeline mixins (NM321): what provides their behaviour in stock diffusers."""

from __future__ import annotations

from neuron_migrate.rules.optimum_names import optimum_names
from neuron_migrate.rules.rows import Manual, Row

# optimum-neuron pipeline mixins -> what provides their behaviour in stock diffusers
MIXINS = {
    "NeuronStableDiffusionXLPipelineMixin": "StableDiffusionXLPipeline",
    "NeuronStableDiffusionControlNetPipelineMixin": "StableDiffusionControlNetPipeline",
    "NeuronStableDiffusionXLControlNetPipelineMixin": "StableDiffusionXLControlNetPipeline",
    "NeuronIPAdapterMixin": "IPAdapterMixin",
}
MIXIN_MODULES = {
    "NeuronStableDiffusionXLPipelineMixin": "pipelines.diffusers.pipeline_utils",
    "NeuronStableDiffusionControlNetPipelineMixin": "pipelines.diffusers.pipeline_controlnet",
    "NeuronStableDiffusionXLControlNetPipelineMixin": "pipelines.diffusers.pipeline_controlnet_sd_xl",
    "NeuronIPAdapterMixin": "pipelines.diffusers",
}

MIXIN_TARGETS = {
    qname: name
    for name, module in MIXIN_MODULES.items()
    for qname in optimum_names(name, "pipelines", "pipelines.diffusers", module, top_level=False)
}

MIXIN_STEP = "{name} adapted diffusers to compiled models: drop it and build on diffusers' {stock}"

ROWS = tuple(
    Row(qname, "NM321", Manual(MIXIN_STEP.format(name=name, stock=MIXINS[name])))
    for qname, name in MIXIN_TARGETS.items()
)
