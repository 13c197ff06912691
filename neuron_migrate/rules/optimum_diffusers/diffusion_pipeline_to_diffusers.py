"""NM320: Neuron*Pipeline.from_pretrained -> diffusers *Pipeline.from_pretrained(...).to("neuron")"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from neuron_migrate.migrate.context import code_of
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
from neuron_migrate.rules.optimum_inference.common import DOCS_HF_NATIVE, OPTIMUM_TRIGGERS
from neuron_migrate.rules.optimum_inference.export_settings import (
    RENAMED,
    ExportSettings,
    model_argument,
    tensor_parallel_size,
    unresolved_review,
)
from neuron_migrate.rules.optimum_inference.loader_index import Load
from neuron_migrate.rules.optimum_inference.loader_rule import NeuronLoaderRule
from neuron_migrate.rules.optimum_inference.reading import Keyword
from neuron_migrate.rules.optimum_names import with_methods
from neuron_migrate.rules.xla_step.common import with_args


# Loading keywords the sharded denoiser takes from the pipeline's call: where and what to download.
SHARED_LOADING = ("revision", "token", "cache_dir", "local_files_only", "force_download", "variant")
BIND_DEVICE = 'torch.accelerator.set_device_index(int(os.environ["LOCAL_RANK"]))'


@dataclass(frozen=True)
class ShardedLoad:
    """A pipeline's denoiser loaded sharded ahead of the pipeline: ``before`` loads it into ``variable``,
    which the pipeline takes as its ``component`` keyword."""

    component: str
    variable: str
    before: str


def _assignment(variable: str, func: str, args: list[str], width: int = 100) -> str:
    """``variable = func(args)``, one argument per line when one line would be wider than ``width``."""
    line = f"{variable} = {func}({', '.join(args)})\n"
    if len(line) <= width:
        return line
    return f"{variable} = {func}(\n" + "".join(f"    {arg},\n" for arg in args) + ")\n"


class _Effects(cst.CSTVisitor):
    """Finds a call or another expression that does something when it is evaluated."""

    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.Call, cst.Await, cst.Yield, cst.NamedExpr, cst.Lambda)):
            self.found = True
        return not self.found


def _reads_twice(expr: cst.BaseExpression) -> bool:
    """Whether ``expr`` can be written twice (no call or other effect in it): ``sys.argv[1]``, ``args.model``."""
    effects = _Effects()
    expr.visit(effects)
    return not effects.found


def _last_name(target: str) -> str:
    """``pipe`` for ``pipe`` or ``self.pipe``; "" for anything else."""
    name = target.rsplit(".", 1)[-1]
    return name if name.isidentifier() else ""


@register
class DiffusionPipelineToDiffusers(NeuronLoaderRule):
    """``Neuron<Name>Pipeline.from_pretrained(model_id, export=True, ...)`` -> the diffusers
    ``<Name>Pipeline.from_pretrained(model_id, dtype=torch.bfloat16).to("neuron")`` (Diffusers runs
    natively on TorchNeuron: Neuron docs, TorchNeuron resources). With tensor parallelism the
    denoiser is loaded first, sharded while it is read (``ModelMixin.from_pretrained(parallel_config=...)``,
    diffusers parallelism docs; the pipeline's own ``from_pretrained`` takes no parallel_config), and
    handed to the pipeline."""

    meta = RuleMeta(
        "NM320",
        'Neuron*Pipeline.from_pretrained -> diffusers *Pipeline.from_pretrained(...).to("neuron")',
        safety=REVIEW,
        risks=frozenset({"numerics", "performance", "checkpoint-format", "launch"}),
        summary=(
            "The stock diffusers pipeline loads the original checkpoint in bfloat16 (optimum-neuron auto-cast "
            "matmuls to bf16 by default) and moves to the neuron device. export= and compiler flags go; the "
            "compiled height/width/batch become a marker; tensor_parallel_size loads the Flux transformer sharded "
            "(from_pretrained(parallel_config=...)) once the torchrun ranks joined the neuron process group. Calls "
            "that compiled in LoRA/ControlNet/IP-Adapter weights are left to a human "
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
        dtype_code = next((passed[n].code for n in ("dtype", "torch_dtype") if n in passed), "")
        if not dtype_code:
            dtype, cast_review = settings.cast_dtype(gated=True, default_cast="matmul", default_type="bf16")
            if dtype is not None:
                dtype_code = f"{self.ctx.require_import('torch')}.{dtype}"
                extra.append(new_keyword(dtype_name, dtype_code))
            review += [cast_review] if cast_review else []
        for keyword in (settings.auto_cast, settings.auto_cast_type):
            if keyword is not None:
                dropped.append(f"{keyword.name} ({dtype_name}= sets the precision)")
        if settings.shapes:
            review.insert(0, diffusion_shapes_review(settings.shapes))
        parallel = self._tensor_parallel(settings, target, load, review, dropped, dtype_code)
        if parallel is not None:
            extra.append(new_keyword(parallel.component, parallel.variable))
        checkpoint = settings.checkpoint_review(model_argument(original, reading))
        review += [r for r in (unresolved_review(original, reading), checkpoint) if r]

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
            why = f"{target}'s {parallel.component} is loaded sharded over the ranks, then given to the pipeline"
            self.follow_with(load, "", why, before=parallel.before)
        return Edit(new, message=note + self.spread_note(reading), review=checks)

    def _tensor_parallel(
        self, settings: ExportSettings, target: str, load: Load, review, dropped, dtype: str
    ) -> ShardedLoad | None:
        """How the denoiser is loaded sharded, or None (dropped, with a note saying why)."""
        keyword = settings.tensor_parallel
        cores = tensor_parallel_size(keyword)
        if keyword is None:
            return None
        if cores == 1:
            dropped.append(f"{keyword.name} (one NeuronCore)")
            return None
        dropped.append(f"{keyword.name} (see the marker)")
        size = keyword.code if isinstance(cores, Keyword) else str(cores)
        if target not in TENSOR_PARALLEL_DENOISER:
            what = "the denoiser" if target == "DiffusionPipeline" else f"{target}'s denoiser"
            review.append(f"{keyword.name}={size} dropped: diffusers has no tensor-parallel plan for {what}")
            return None
        component, model_class = TENSOR_PARALLEL_DENOISER[target]
        model_id = self._model_id(load)
        variable = f"{_last_name(load.target) or 'pipe'}_{component}"
        if load.line is None or model_id is None or component in settings.passed or variable in self.ctx.text:
            config = f"ParallelConfig(tensor_parallel_config=TensorParallelConfig(tp_degree={size}))"
            review.append(
                f"{keyword.name}={size} dropped: load the {component} sharded with `{model_class}.from_pretrained("
                f'model_id, subfolder="{component}", parallel_config={config})` and pass it to the pipeline as '
                f"{component}=, under torchrun --nproc-per-node {size}"
            )
            return None
        parallel = self.ctx.require_from_import("diffusers", "ParallelConfig")
        tensor = self.ctx.require_from_import("diffusers", "TensorParallelConfig")
        config = f"{parallel}(tensor_parallel_config={tensor}(tp_degree={size}))"
        denoiser = self.ctx.require_from_import("diffusers", model_class)
        options = [f'subfolder="{component}"']
        options += [f"{dtype_keyword()}={dtype}"] if dtype else []
        options += [f"{name}={settings.passed[name].code}" for name in SHARED_LOADING if name in settings.passed]
        options.append(f"parallel_config={config}")
        load_denoiser = _assignment(variable, f"{denoiser}.from_pretrained", [model_id, *options])
        before = self._process_group(review, size) + load_denoiser
        dropped[-1] = f"{keyword.name} (the {component} is loaded sharded: parallel_config)"
        review.append(f"tensor parallel over {size} NeuronCores: launch with torchrun --nproc-per-node {size}")
        if isinstance(cores, Keyword):
            review[-1] += "; with one core, parallel_config and the process group are not needed"
        return ShardedLoad(component, variable, before)

    def _model_id(self, load: Load) -> str | None:
        """The code of the model id, when reading it twice is harmless (no call in it)."""
        value = model_argument(load.call, load.reading)
        return code_of(value) if value is not None and _reads_twice(value) else None

    def _process_group(self, review: list[str], size: str) -> str:
        """The statements that start the process group before the sharded load ("" when the file
        starts one itself: then a note says what it must do first)."""
        if self.index().starts_process_group():
            review.append(f"bind each rank to its NeuronCore before the file's init_process_group: {BIND_DEVICE}")
            return ""
        os_module = self.ctx.require_import("os")
        torch_module = self.ctx.require_import("torch")
        dist = self.ctx.require_import("torch.distributed", alias="dist")
        return (
            f"if not {dist}.is_initialized():\n"
            f'    {torch_module}.accelerator.set_device_index(int({os_module}.environ["LOCAL_RANK"]))\n'
            f'    {dist}.init_process_group("neuron")\n'
        )

    def _left_to_a_human(self, original: cst.Call, updated: cst.Call, load: Load, target: str):
        reading = load.reading
        if reading is not None and set(reading.keywords) & ADAPTER_KEYWORDS:
            steps = adapter_steps(reading.keywords, target)
            message = f"load adapters with diffusers' own API: {'; '.join(steps)}"
            self.ctx.manual(self.meta, original, message, fix="\n".join(steps))
        else:
            load_code = f'{target}.from_pretrained(model_id, {dtype_keyword()}=torch.bfloat16).to("neuron")'
            self.ctx.manual(self.meta, original, f"load with `{load_code}`")
        return updated

    def constructor(self, original: cst.Call, updated: cst.Call, qname: str):
        _, target = self.target_of(qname)
        self.ctx.manual(
            self.meta,
            original,
            f'the constructor took compiled models; load with `{target}.from_pretrained(model_id).to("neuron")`',
        )
        return updated

    def reference(self, original: cst.CSTNode, updated: cst.CSTNode, qname: str):
        legacy, target = self.target_of(qname)
        load = f'{target}.from_pretrained(model_id).to("neuron")'
        return self.rename_class(original, updated, legacy, "diffusers", target, load)
