"""NM303: NeuronSentenceTransformers -> SentenceTransformer(model_id, device="neuron")"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import REVIEW, Edit, Example, RuleMeta, register
from neuron_migrate.rules.calls import new_keyword
from neuron_migrate.rules.optimum_inference.common import (
    DOCS_HF_NATIVE,
    DOCS_SENTENCE_TRANSFORMERS,
    OPTIMUM_TRIGGERS,
    SENTENCE_TRANSFORMERS,
)
from neuron_migrate.rules.optimum_inference.export_settings import ExportSettings, model_argument, unresolved_review
from neuron_migrate.rules.optimum_inference.loader_rule import NeuronLoaderRule
from neuron_migrate.rules.optimum_inference.reading import Keyword
from neuron_migrate.rules.optimum_names import with_methods
from neuron_migrate.rules.tables.optimum_inference import ROWS
from neuron_migrate.rules.xla_step.common import with_args

# SentenceTransformer keeps these loading arguments (under its own names); the rest go.
SENTENCE_TRANSFORMER_KEYWORDS = {
    "revision": "revision",
    "token": "token",
    "use_auth_token": "token",
    "trust_remote_code": "trust_remote_code",
    "local_files_only": "local_files_only",
    "cache_dir": "cache_folder",
}


@register
class SentenceTransformersToStock(NeuronLoaderRule):
    """``NeuronSentenceTransformers`` (``NeuronModelForSentenceTransformers`` up to 0.3) ->
    ``sentence_transformers.SentenceTransformer(model_id, device="neuron")``; ``NeuronModelForEmbedding``
    has no one-line counterpart (pooling differs per model) and is left to a human."""

    meta = RuleMeta(
        "NM303",
        'NeuronSentenceTransformers -> SentenceTransformer(model_id, device="neuron")',
        safety=REVIEW,
        risks=frozenset({"numerics", "performance", "checkpoint-format"}),
        summary=(
            "sentence-transformers loads the original model on the neuron device; export settings are dropped "
            "and the compiled shapes become a marker (encode() pads each batch to its longest text)."
        ),
        docs=(DOCS_SENTENCE_TRANSFORMERS, DOCS_HF_NATIVE),
        triggers=OPTIMUM_TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron import NeuronSentenceTransformers\n\n"
                "model = NeuronSentenceTransformers.from_pretrained(\n"
                '    "BAAI/bge-small-en-v1.5", export=True, batch_size=1, sequence_length=384\n'
                ")\n"
            ),
            after=(
                "from sentence_transformers import SentenceTransformer\n\n"
                "# neuron-migrate(NM303): inputs must keep these shapes: max 384 tokens and batch 1; encode() pads "
                "each batch to its longest text, so other lengths compile new graphs\n"
                "model = SentenceTransformer(\n"
                '    "BAAI/bge-small-en-v1.5", device="neuron"\n'
                ")\n"
            ),
        ),
    )
    loads = dict.fromkeys(with_methods(SENTENCE_TRANSFORMERS, "from_pretrained"), "load")
    calls = {
        **loads,
        **dict.fromkeys(SENTENCE_TRANSFORMERS, "constructor"),
    }
    references = dict.fromkeys(SENTENCE_TRANSFORMERS, "reference")
    rows = ROWS

    def load(self, original: cst.Call, updated: cst.Call, qname: str):
        load = self.load_of(original)
        if not load.migrates:
            self.ctx.manual(self.meta, original, 'load with `SentenceTransformer(model_id, device="neuron")`')
            return updated
        reading = load.reading
        settings = ExportSettings.read(reading)
        dropped = list(settings.dropped)
        extra = [new_keyword("device", '"neuron"')]
        review = []
        dtype, cast_review = settings.cast_dtype(gated=True)
        if "torch_dtype" in settings.passed or "dtype" in settings.passed:
            dtype_code = (settings.passed.get("dtype") or settings.passed["torch_dtype"]).code
        else:
            dtype_code = f"{self.ctx.require_import('torch')}.{dtype}" if dtype else ""
            review += [cast_review] if cast_review else []
        if dtype_code:
            extra.append(new_keyword("model_kwargs", f'{{"dtype": {dtype_code}}}'))
        for keyword in (settings.auto_cast, settings.auto_cast_type, settings.tensor_parallel):
            if keyword is not None:
                dropped.append(keyword.name)

        def rename(keyword: Keyword) -> str | None:
            if keyword.name not in settings.passed or keyword.name in ("dtype", "torch_dtype"):
                return None
            new = SENTENCE_TRANSFORMER_KEYWORDS.get(keyword.name)
            if new is None:
                dropped.append(f"{keyword.name} (not a SentenceTransformer argument)")
            return new

        args = reading.rebuilt(updated, rename) + extra
        if settings.shapes:
            review.append(self.shapes_review(settings.shapes))
        checkpoint = settings.checkpoint_review(model_argument(original, reading))
        review += [r for r in (unresolved_review(original, reading), checkpoint) if r]
        checks = "; ".join(review) or "encode() pads each batch to its longest text: lengths vary"
        name = self.ctx.require_from_import("sentence_transformers", "SentenceTransformer")
        note = f'{qname.rsplit(".", 2)[1]} -> SentenceTransformer on device "neuron"'
        note += (f"; dropped {', '.join(dropped)}" if dropped else "") + self.spread_note(reading)
        return Edit(with_args(updated.with_changes(func=self.ctx.expr(name)), args), message=note, review=checks)

    @staticmethod
    def shapes_review(shapes: dict[str, str]) -> str:
        shapes = dict(shapes)
        limits = []
        if "sequence_length" in shapes:
            limits.append(f"max {shapes.pop('sequence_length')} tokens")
        batch = shapes.pop("batch_size", None)
        limits += [f"{name}={value}" for name, value in shapes.items()]
        if batch is not None:
            limits.append(f"batch {batch}")
        return (
            f"inputs must keep these shapes: {' and '.join(limits)}; encode() pads each batch to its longest text, "
            "so other lengths compile new graphs"
        )

    def constructor(self, original: cst.Call, updated: cst.Call, qname: str):
        self.ctx.manual(self.meta, original, 'load with `SentenceTransformer(model_id, device="neuron")`')
        return updated

    def reference(self, original: cst.CSTNode, updated: cst.CSTNode, qname: str):
        legacy = qname.rsplit(".", 1)[1]
        load = 'SentenceTransformer(model_id, device="neuron")'
        return self.rename_class(original, updated, legacy, "sentence_transformers", "SentenceTransformer", load)
