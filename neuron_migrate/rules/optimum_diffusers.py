"""optimum-neuron diffusion pipelines -> the stock diffusers pipelines on "neuron".

Each ``Neuron<Name>Pipeline`` subclassed the diffusers ``<Name>Pipeline`` and swapped its models for
compiled ones. Diffusers runs natively on TorchNeuron (Neuron docs, TorchNeuron resources), so the
stock class loads the checkpoint and moves to the device. optimum-neuron auto-cast matmuls to bf16 by
default, hence ``dtype=torch.bfloat16`` (``torch_dtype`` before diffusers deprecated it) unless the
call chose otherwise. Tensor parallelism is
diffusers' own (``enable_parallelism`` with a ``ParallelConfig``): only denoisers with a
tensor-parallel plan (the Flux transformer) can be sharded. Adapters compiled into the pipeline
(LoRA, ControlNet, IP-Adapter) load through diffusers' loader methods instead.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

import libcst as cst

from neuron_migrate.rules.base import MANUAL, REVIEW, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import new_keyword
from neuron_migrate.rules.optimum_inference import (
    ANNOTATION,
    DOCS_HF_NATIVE,
    ISINSTANCE,
    OPTIMUM_TRIGGERS,
    RENAMED,
    ExportSettings,
    Keyword,
    Load,
    NeuronLoaderRule,
    tensor_parallel_size,
    torchrun_review,
    unresolved_review,
)
from neuron_migrate.rules.optimum_names import optimum_names, with_methods
from neuron_migrate.rules.tables.optimum_diffusers import ROWS
from neuron_migrate.rules.xla_step import with_args

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

# Pipelines whose denoiser diffusers can shard (its model class has a tensor-parallel plan): the component.
TENSOR_PARALLEL_DENOISER = {
    "FluxPipeline": "transformer",
    "FluxKontextPipeline": "transformer",
    "FluxInpaintPipeline": "transformer",
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


@register
class DiffusionPipelineToDiffusers(NeuronLoaderRule):
    """``Neuron<Name>Pipeline.from_pretrained(model_id, export=True, ...)`` -> the diffusers
    ``<Name>Pipeline.from_pretrained(model_id, dtype=torch.bfloat16).to("neuron")`` (Diffusers runs
    natively on TorchNeuron: Neuron docs, TorchNeuron resources; tensor parallelism: diffusers
    ParallelConfig docs)."""

    meta = RuleMeta(
        "NM320",
        'Neuron*Pipeline.from_pretrained -> diffusers *Pipeline.from_pretrained(...).to("neuron")',
        safety=REVIEW,
        risks=frozenset({"numerics", "performance", "checkpoint-format", "launch"}),
        summary=(
            "The stock diffusers pipeline loads the original checkpoint in bfloat16 (optimum-neuron auto-cast "
            "matmuls to bf16 by default) and moves to the neuron device. export= and compiler flags go; the "
            "compiled height/width/batch become a marker; tensor_parallel_size shards the Flux transformer with "
            "enable_parallelism. Calls that compiled in LoRA/ControlNet/IP-Adapter weights are left to a human "
            "with the diffusers loader calls to write."
        ),
        docs=(DOCS_HF_NATIVE, DOCS_DIFFUSERS_PARALLEL, DOCS_DIFFUSERS_LORA),
        triggers=OPTIMUM_TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron import NeuronStableDiffusionXLPipeline\n\n"
                "pipe = NeuronStableDiffusionXLPipeline.from_pretrained(\n"
                '    "stabilityai/stable-diffusion-xl-base-1.0", export=True, batch_size=1, height=1024, width=1024\n'
                ")\n"
            ),
            after=(
                "from diffusers import StableDiffusionXLPipeline\n"
                "import torch\n\n"
                "# neuron-migrate(NM320): keep the compiled shapes in every pipe(...) call: height=1024, width=1024 "
                "and batch 1; weights now load in torch.bfloat16 (auto_cast cast only matmuls): check accuracy\n"
                "pipe = StableDiffusionXLPipeline.from_pretrained(\n"
                '    "stabilityai/stable-diffusion-xl-base-1.0", dtype=torch.bfloat16\n'
                ').to("neuron")\n'
            ),
        ),
    )
    loads = dict.fromkeys(with_methods(tuple(PIPELINE_TARGETS), "from_pretrained"), "load")
    calls = {**dict.fromkeys(PIPELINE_TARGETS, "constructor"), **loads}
    references = dict.fromkeys(PIPELINE_TARGETS, "reference")
    manual_keywords = ADAPTER_KEYWORDS

    def target_of(self, qname: str) -> tuple[str, str]:
        for legacy, target in PIPELINE_TARGETS.items():
            if qname == legacy or qname.startswith(legacy + "."):
                return legacy.rsplit(".", 1)[1], target
        raise KeyError(qname)

    def load(self, original: cst.Call, updated: cst.Call, qname: str):
        legacy, target = self.target_of(qname)
        load = self.load_of(original)
        if not load.migrates:
            return self._left_to_a_human(original, updated, load, target)
        reading = load.reading
        settings = ExportSettings.read(reading)
        passed = settings.passed
        dropped, review, extra = list(settings.dropped), [], []
        dtype_name = dtype_keyword()
        if "torch_dtype" not in passed and "dtype" not in passed:
            dtype, cast_review = settings.cast_dtype(gated=True, default_cast="matmul", default_type="bf16")
            if dtype is not None:
                extra.append(new_keyword(dtype_name, f"{self.ctx.require_import('torch')}.{dtype}"))
            review += [cast_review] if cast_review else []
        for keyword in (settings.auto_cast, settings.auto_cast_type):
            if keyword is not None:
                dropped.append(f"{keyword.name} ({dtype_name}= sets the precision)")
        if settings.shapes:
            review.insert(0, diffusion_shapes_review(settings.shapes))
        parallel = self._tensor_parallel(settings, target, load, review, dropped)
        review += [r for r in (unresolved_review(original, reading), settings.checkpoint_review()) if r]

        def rename(keyword: Keyword) -> str | None:
            if keyword.name not in passed:
                return None
            if keyword.name in ("torch_dtype", "dtype"):
                return dtype_name
            if keyword.name in IGNORED_BY_PIPELINES:
                dropped.append(f"{keyword.name} ({IGNORED_BY_PIPELINES[keyword.name]})")
                return None
            return RENAMED.get(keyword.name, keyword.name)

        cls = self.ctx.require_from_import("diffusers", target)
        func = self.ctx.expr(f"{cls}.from_pretrained")
        loaded = with_args(updated.with_changes(func=func), reading.rebuilt(updated, rename) + extra)
        to_device = cst.Attribute(value=loaded, attr=cst.Name("to"))
        new = cst.Call(func=to_device, args=[cst.Arg(cst.SimpleString('"neuron"'))])
        self.ctx.review("; ".join(review) or "keep height, width and batch size fixed across pipe(...) calls")
        note = f'{legacy} -> {target} on device "neuron"' + (f"; dropped {', '.join(dropped)}" if dropped else "")
        self.ctx.note(note + self.spread_note(reading))
        if parallel is not None:
            self.follow_with(load, parallel, f"{target}'s denoiser is sharded with diffusers tensor parallelism")
        return new

    def _tensor_parallel(self, settings: ExportSettings, target: str, load: Load, review, dropped) -> str | None:
        """The statement that shards the denoiser, or None (dropped, with a note saying why)."""
        keyword = settings.tensor_parallel
        cores = tensor_parallel_size(keyword)
        if keyword is None:
            return None
        dropped.append(f"{keyword.name} (tensor parallelism is set on the denoiser)")
        if cores == 1:
            return None
        component = TENSOR_PARALLEL_DENOISER.get(target)
        size = keyword.code if isinstance(cores, Keyword) else str(cores)
        if component is None:
            what = "the denoiser" if target == "DiffusionPipeline" else f"{target}'s denoiser"
            review.append(f"{keyword.name}={size} dropped: diffusers has no tensor-parallel plan for {what}")
            return None
        parallel = self.ctx.require_from_import("diffusers", "ParallelConfig")
        tensor = self.ctx.require_from_import("diffusers", "TensorParallelConfig")
        enable = (
            f".{component}.enable_parallelism(config={parallel}(tensor_parallel_config={tensor}(tp_degree={size})))"
        )
        if load.line is None or not load.target:
            review.append(f"{keyword.name}={size} dropped: shard with `pipe{enable}`")
            return None
        review.append(torchrun_review(cores) + '; dist.init_process_group("neuron") must run first')
        return f"{load.target}{enable}\n"

    def _left_to_a_human(self, original: cst.Call, updated: cst.Call, load: Load, target: str):
        reading = load.reading
        if reading is not None and set(reading.keywords) & ADAPTER_KEYWORDS:
            steps = adapter_steps(reading.keywords, target)
            message = f"load adapters with diffusers' own API: {'; '.join(steps)}"
            self.ctx.manual(original, message, fix="\n".join(steps))
        else:
            load_code = f'{target}.from_pretrained(model_id, {dtype_keyword()}=torch.bfloat16).to("neuron")'
            self.ctx.manual(original, f"load with `{load_code}`")
        return updated

    def constructor(self, original: cst.Call, updated: cst.Call, qname: str):
        _, target = self.target_of(qname)
        self.ctx.manual(
            original,
            f'the constructor took compiled models; load with `{target}.from_pretrained(model_id).to("neuron")`',
        )
        return updated

    def reference(self, original: cst.CSTNode, updated: cst.CSTNode, qname: str):
        legacy, target = self.target_of(qname)
        load = f'{target}.from_pretrained(model_id).to("neuron")'
        return self.rename_class(original, updated, legacy, "diffusers", target, load)


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
                original,
                f"{name} was the compiled {role}; a stock pipeline has one `pipe.vae` (AutoencoderKL) that encodes "
                "and decodes: check that instead",
            )
            return updated
        if self.context_of(original) not in (ISINSTANCE, ANNOTATION):
            self.ctx.manual(original, f"{name} was the compiled {role}: use the stock pipeline's {role} ({stock})")
            return updated
        self.ctx.review(f"{name} was the compiled {role}; a stock pipeline's {role} is a {stock}")
        self.ctx.note(f"{name} -> {module}.{stock}")
        return self.ctx.expr(self.ctx.require_from_import(module, stock))
