"""NM320: Neuron*Pipeline.from_pretrained -> diffusers *Pipeline.from_pretrained(...).to("neuron")"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import REVIEW, Edit, Example, register, RuleMeta
from neuron_migrate.rules.calls import new_keyword
from neuron_migrate.rules.optimum_diffusers.common import (
    ADAPTER_KEYWORDS,
    DOCS_DIFFUSERS_LORA,
    DOCS_DIFFUSERS_PARALLEL,
    IGNORED_BY_PIPELINES,
    PIPELINE_TARGETS,
    TENSOR_PARALLEL_DENOISER,
    adapter_steps,
    diffusion_shapes_review,
    dtype_keyword,
)
from neuron_migrate.rules.optimum_inference.common import (
    DOCS_HF_NATIVE,
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
from neuron_migrate.rules.optimum_names import with_methods
from neuron_migrate.rules.xla_step.common import with_args


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
        checks = "; ".join(review) or "keep height, width and batch size fixed across pipe(...) calls"
        note = f'{legacy} -> {target} on device "neuron"' + (f"; dropped {', '.join(dropped)}" if dropped else "")
        if parallel is not None:
            self.follow_with(load, parallel, f"{target}'s denoiser is sharded with diffusers tensor parallelism")
        return Edit(new, message=note + self.spread_note(reading), review=checks)

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
