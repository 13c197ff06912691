"""NM304: optimum.neuron.pipeline -> transformers.pipeline(..., device="neuron")"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import REVIEW, Edit, Example, RuleMeta, register
from neuron_migrate.rules.calls import keyword_arg, new_keyword
from neuron_migrate.rules.optimum_inference.common import DOCS_HF_NATIVE, DOCS_STATIC_SHAPES, OPTIMUM_TRIGGERS, PIPELINE
from neuron_migrate.rules.optimum_inference.export_settings import (
    EXPORT_ONLY,
    RENAMED,
    TENSOR_PARALLEL,
    ExportSettings,
    shapes_review,
    unresolved_review,
)
from neuron_migrate.rules.optimum_inference.loader_rule import NeuronLoaderRule
from neuron_migrate.rules.optimum_inference.reading import Keyword, Reading, dict_literal
from neuron_migrate.rules.xla_step.common import with_args

# optimum's pipeline() before its **kwargs, in order.
PIPELINE_PARAMS = (
    "task",
    "model",
    "tokenizer",
    "feature_extractor",
    "image_processor",
    "use_fast",
    "export",
    "input_shapes",
    "compiler_args",
    "token",
    "revision",
    "trust_remote_code",
)
PIPELINE_POSITIONAL_KEPT = 2  # task and model keep their places in transformers.pipeline


@register
class PipelineToTransformers(NeuronLoaderRule):
    """``optimum.neuron.pipeline(task, model=..., export=True, input_shapes=...)`` ->
    ``transformers.pipeline(task, model=..., device="neuron")`` (stock pipelines run on TorchNeuron:
    Neuron docs, TorchNeuron resources)."""

    meta = RuleMeta(
        "NM304",
        'optimum.neuron.pipeline -> transformers.pipeline(..., device="neuron")',
        safety=REVIEW,
        risks=frozenset({"numerics", "performance"}),
        summary=(
            "The stock transformers pipeline on the neuron device. export=, compiler_args= (their auto_cast_type "
            "becomes dtype=) and the input shapes go; the marker names the shapes inputs must be padded to."
        ),
        docs=(DOCS_HF_NATIVE, DOCS_STATIC_SHAPES),
        triggers=OPTIMUM_TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron import pipeline\n\n"
                "classifier = pipeline(\n"
                '    "text-classification",\n'
                '    model="distilbert-base-uncased-finetuned-sst-2-english",\n'
                "    export=True,\n"
                '    input_shapes={"batch_size": 1, "sequence_length": 64},\n'
                ")\n"
            ),
            after=(
                "import transformers\n\n"
                "# neuron-migrate(NM304): inputs must keep these shapes: pad with padding=\"max_length\", "
                "max_length=64 and batch 1\n"
                "classifier = transformers.pipeline(\n"
                '    "text-classification",\n'
                '    model="distilbert-base-uncased-finetuned-sst-2-english",\n'
                '    device="neuron",\n'
                ")\n"
            ),
        ),
    )
    loads = dict.fromkeys(PIPELINE, "load")
    calls = dict(loads)
    max_positional = len(PIPELINE_PARAMS)
    manual_keywords = frozenset(TENSOR_PARALLEL)

    def load(self, original: cst.Call, updated: cst.Call, qname: str):
        load = self.load_of(original)
        if not load.migrates:
            self.ctx.manual(
                self.meta,
                original,
                'use `transformers.pipeline(task, model=checkpoint, device="neuron")`; for tensor parallelism '
                'pass `model_kwargs={"distributed_config": DistributedConfig(tp_size=N)}` and launch with torchrun',
            )
            return updated
        reading = load.reading
        # optimum's positional order differs from transformers' after `model`: name them.
        names = {position: PIPELINE_PARAMS[n] for n, position in enumerate(reading.positional)}
        keywords = {name: Keyword(name, original.args[p].value) for p, name in names.items()}
        keywords.update(reading.keywords)
        review, dropped, shapes, dtype = self._export_settings(keywords)
        extra = []
        if dtype is not None and "dtype" not in keywords and "torch_dtype" not in keywords:
            extra.append(new_keyword("dtype", f"{self.ctx.require_import('torch')}.{dtype}"))
        if "device" not in keywords and "device_map" not in keywords:
            extra.append(new_keyword("device", '"neuron"'))
        if shapes:
            review.insert(0, shapes_review(shapes))
        review += [r for r in (unresolved_review(original, reading),) if r]

        def rename(keyword: Keyword) -> str | None:
            return None if keyword.name in dropped else RENAMED.get(keyword.name, keyword.name)

        args = []
        for position, arg in enumerate(updated.args):
            name = names.get(position)
            if name is not None and name not in dropped:
                args.append(arg if position < PIPELINE_POSITIONAL_KEPT else keyword_arg(arg, rename(keywords[name])))
        args += [arg for arg in reading.rebuilt(updated, rename) if arg.keyword is not None or arg.star] + extra
        checks = "; ".join(review) or 'pad inputs to fixed shapes (padding="max_length")'
        function = self.ctx.require_from_import("transformers", "pipeline")
        note = (
            'optimum.neuron.pipeline -> transformers.pipeline on device "neuron"'
            + (f"; dropped {', '.join(dropped)}" if dropped else "")
            + self.spread_note(reading)
        )
        return Edit(with_args(updated.with_changes(func=self.ctx.expr(function)), args), message=note, review=checks)

    @staticmethod
    def _export_settings(keywords: dict[str, Keyword]) -> tuple[list[str], list[str], dict[str, str], str | None]:
        """(review notes, dropped keyword names, input shapes, dtype) of the pipeline's export keywords."""
        review, dropped, shapes, dtype = [], [], {}, None
        for name, keyword in keywords.items():
            if name in ("batch_size", "sequence_length"):
                shapes[name] = keyword.code
            elif name == "input_shapes":
                pairs = dict_literal(keyword.value)
                if pairs is None:
                    review.append(f"inputs must keep the shapes in `{keyword.code}`: pad to them")
                else:
                    shapes.update({key: code_of(value).strip() for key, value in pairs.items()})
            elif name == "compiler_args":
                pairs = dict_literal(keyword.value)
                if pairs is None:
                    review.append(f"set dtype= to match the auto_cast_type in `{keyword.code}`")
                else:
                    settings = ExportSettings.read(Reading([], {k: Keyword(k, v) for k, v in pairs.items()}))
                    dtype, cast_review = settings.cast_dtype(gated=True)
                    review += [cast_review] if cast_review else []
            elif name not in EXPORT_ONLY or name == "task":
                continue
            dropped.append(name)
        return review, dropped, shapes, dtype
