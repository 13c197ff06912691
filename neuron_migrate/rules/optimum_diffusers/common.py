"""What the optimum_diffusers rules share: helpers, constants and base classes."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

from neuron_migrate.rules.optimum_inference.reading import Keyword
from neuron_migrate.rules.optimum_names import optimum_names

DOCS_DIFFUSERS_PARALLEL = "https://huggingface.co/docs/diffusers/api/parallel"
DOCS_DIFFUSERS_LORA = "https://huggingface.co/docs/diffusers/using-diffusers/loading_adapters"
# optimum-neuron 0.4.5 modeling_diffusion -> diffusers
PIPELINES = {
    "NeuronDiffusionPipelineBase": "DiffusionPipeline",
    "NeuronStableDiffusionPipeline": "StableDiffusionPipeline",
    "NeuronStableDiffusionImg2ImgPipeline": "StableDiffusionImg2ImgPipeline",
    "NeuronStableDiffusionInpaintPipeline": "StableDiffusionInpaintPipeline",
    "NeuronStableDiffusionInstructPix2PixPipeline": "StableDiffusionInstructPix2PixPipeline",
    "NeuronLatentConsistencyModelPipeline": "LatentConsistencyModelPipeline",
    "NeuronStableDiffusionXLPipeline": "StableDiffusionXLPipeline",
    "NeuronStableDiffusionXLImg2ImgPipeline": "StableDiffusionXLImg2ImgPipeline",
    "NeuronStableDiffusionXLInpaintPipeline": "StableDiffusionXLInpaintPipeline",
    "NeuronStableDiffusionControlNetPipeline": "StableDiffusionControlNetPipeline",
    "NeuronStableDiffusionXLControlNetPipeline": "StableDiffusionXLControlNetPipeline",
    "NeuronPixArtAlphaPipeline": "PixArtAlphaPipeline",
    "NeuronPixArtSigmaPipeline": "PixArtSigmaPipeline",
    "NeuronFluxPipeline": "FluxPipeline",
    "NeuronFluxKontextPipeline": "FluxKontextPipeline",
    "NeuronFluxInpaintPipeline": "FluxInpaintPipeline",
}
PIPELINE_TARGETS = {
    qname: target for name, target in PIPELINES.items() for qname in optimum_names(name, "modeling_diffusion")
}
# Pipelines whose denoiser diffusers can shard (its model class has a tensor-parallel plan): the
# component and its model class, which from_pretrained(parallel_config=...) loads sharded (diffusers 0.42;
# the pipeline's own from_pretrained takes no parallel_config).
TENSOR_PARALLEL_DENOISER = {
    "FluxPipeline": ("transformer", "FluxTransformer2DModel"),
    "FluxKontextPipeline": ("transformer", "FluxTransformer2DModel"),
    "FluxInpaintPipeline": ("transformer", "FluxTransformer2DModel"),
}
# Export arguments that compiled adapters into the pipeline: what each becomes in diffusers' own API.
ADAPTERS = {
    "lora": ("lora_model_ids", "lora_weight_names", "lora_adapter_names", "lora_scales"),
    "controlnet": ("controlnet_ids",),
    "ip_adapter": (
        "ip_adapter_ids",
        "ip_adapter_subfolders",
        "ip_adapter_weight_names",
        "ip_adapter_scales",
        # the export command's singular spellings
        "ip_adapter_id",
        "ip_adapter_subfolder",
        "ip_adapter_weight_name",
        "ip_adapter_scale",
    ),
    "unet": ("unet_id",),
}
ADAPTER_KEYWORDS = frozenset(name for names in ADAPTERS.values() for name in names)
# Loading keywords of optimum-neuron's traced components that a diffusers pipeline does not take
# (it logs "not expected ... and will be ignored"), and why each goes.
IGNORED_BY_PIPELINES = {
    "output_attentions": "a diffusers pipeline returns no attentions",
    "output_hidden_states": "a diffusers pipeline returns no hidden states",
    "subfolder": "a diffusers pipeline loads every component from the repository root",
    "config": "a diffusers pipeline reads its own model_index.json",
}


@cache
def dtype_keyword() -> str:
    """``dtype`` where the installed diffusers takes it, else ``torch_dtype``.

    diffusers deprecated ``torch_dtype`` for ``dtype`` in 2026 (earlier releases ignore ``dtype``).
    Read from the installed source without importing it: the command line must not need torch.
    With no diffusers installed, the current name."""
    spec = importlib.util.find_spec("diffusers")
    if spec is None or not spec.submodule_search_locations:
        return "dtype"
    source = Path(next(iter(spec.submodule_search_locations))) / "utils" / "deprecation_utils.py"
    try:
        return "dtype" if "_resolve_dtype" in source.read_text(encoding="utf-8") else "torch_dtype"
    except OSError:
        return "torch_dtype"


def _value(keywords: dict[str, Keyword], *names: str) -> str:
    return next((keywords[n].code for n in names if n in keywords), "")


def adapter_steps(keywords: dict[str, Keyword], target: str) -> list[str]:
    """The diffusers code that loads what the export arguments compiled in, as lines."""
    load_args = ["model_id", f"{dtype_keyword()}=torch.bfloat16"]
    before, after = [], []
    unet = _value(keywords, "unet_id")
    if unet:
        before.append(f'unet = UNet2DConditionModel.from_pretrained({unet}, subfolder="unet")')
        load_args.append("unet=unet")
    controlnet = _value(keywords, "controlnet_ids")
    if controlnet:
        before.append(f"controlnet = ControlNetModel.from_pretrained({controlnet})")
        load_args.append("controlnet=controlnet")
    lora = _value(keywords, "lora_model_ids")
    if lora:
        weight, adapter = _value(keywords, "lora_weight_names"), _value(keywords, "lora_adapter_names")
        options = [f"weight_name={weight}"] * bool(weight) + [f"adapter_name={adapter}"] * bool(adapter)
        after.append(f"pipe.load_lora_weights({', '.join([lora, *options])})")
        scales = _value(keywords, "lora_scales")
        if scales:
            after.append(f"pipe.set_adapters({adapter or '...'}, adapter_weights={scales})")
    ip_adapter = _value(keywords, "ip_adapter_ids", "ip_adapter_id")
    if ip_adapter:
        subfolder = _value(keywords, "ip_adapter_subfolders", "ip_adapter_subfolder") or '""'
        weight = _value(keywords, "ip_adapter_weight_names", "ip_adapter_weight_name") or "..."
        after.append(f"pipe.load_ip_adapter({ip_adapter}, subfolder={subfolder}, weight_name={weight})")
        scale = _value(keywords, "ip_adapter_scales", "ip_adapter_scale")
        if scale:
            after.append(f"pipe.set_ip_adapter_scale({scale})")
    return [*before, f'pipe = {target}.from_pretrained({", ".join(load_args)}).to("neuron")', *after]


def diffusion_shapes_review(shapes: dict[str, str]) -> str:
    shapes = dict(shapes)
    batch = shapes.pop("batch_size", None)
    parts = ", ".join(f"{name}={value}" for name, value in shapes.items())
    if batch is not None:
        parts = f"{parts} and batch {batch}" if parts else f"batch {batch}"
    return f"keep the compiled shapes in every pipe(...) call: {parts}"


# optimum-neuron's compiled pipeline components -> the stock class the diffusers pipeline holds there
# (None: the stock pipeline has no such component).
COMPONENTS = {
    "NeuronModelTextEncoder": ("text encoder", "transformers", "PreTrainedModel"),
    "NeuronModelImageEncoder": ("image encoder", "transformers", "PreTrainedModel"),
    "NeuronModelUnet": ("unet", "diffusers", "UNet2DConditionModel"),
    "NeuronModelTransformer": ("transformer", "diffusers", "ModelMixin"),
    "NeuronModelVae": ("vae", "diffusers", "AutoencoderKL"),
    "NeuronControlNetModel": ("controlnet", "diffusers", "ControlNetModel"),
    "NeuronMultiControlNetModel": ("controlnet", "diffusers", "MultiControlNetModel"),
    "NeuronModelVaeEncoder": ("vae encoder", None, None),
    "NeuronModelVaeDecoder": ("vae decoder", None, None),
}
COMPONENT_NAMES = {
    qname: name for name in COMPONENTS for qname in optimum_names(name, "modeling_diffusion", top_level=False)
}
