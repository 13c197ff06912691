"""NM636: generate() of a Hugging Face model with a static KV cache"""

from __future__ import annotations

import re

import libcst as cst

from neuron_migrate.migrate.context import root_name
from neuron_migrate.rules.base import REVIEW, Edit, Example, RuleMeta, register
from neuron_migrate.rules.calls import new_keyword, with_args
from neuron_migrate.rules.cuda.common import CudaRule

DOCS_STATIC_CACHE = "https://huggingface.co/docs/transformers/kv_cache"
DOCS_NEURON_GENERATE = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/tutorials/tutorial-hf-inference-torch-compile.html"
)
HUGGING_FACE_IMPORT = re.compile(r"^[ \t]*(?:from|import)[ \t]+(?:transformers|peft|trl)\b", re.MULTILINE)
# keywords that only Hugging Face's generate() takes, so ``x.generate(...)`` is that one
GENERATE_KEYWORDS = frozenset(
    {"max_new_tokens", "max_length", "min_new_tokens", "do_sample", "num_beams", "top_p", "top_k", "temperature",
     "repetition_penalty", "pad_token_id", "eos_token_id", "num_return_sequences", "streamer", "input_ids"}
)
# keywords that already choose the cache, or turn it off
CACHE_KEYWORDS = frozenset({"cache_implementation", "past_key_values", "use_cache", "generation_config"})
# ``**inputs`` of a tokenizer's output holds tensors, never generation settings
INPUT_SPREAD = re.compile(r"(?i)input|batch|enc|token|features")
STATIC_REVIEW = (
    'cache_implementation="static": a KV cache of fixed size, so each decoding step has the same shape on the neuron '
    "device (a growing cache compiles a graph per token); a model without static-cache support raises"
)
# the class names of Hugging Face's generating models; one imported from the project's own code may keep a cache of
# its own (a KV-eviction scheme, say), which a static cache would replace
GENERATING_MODEL = re.compile(r"(?:ForCausalLM|ForConditionalGeneration|LMHeadModel|Seq2SeqLM)$")
OWN_MODEL_STEP = (
    "the model class {name} is this project's own and may keep a KV cache of its own: if it runs on Hugging "
    'Face\'s cache, pass cache_implementation="static" to generate(), so each decoding step has the same shape'
)
OWN_GENERATE = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+generate\b", re.MULTILINE)
GENERATION_CONFIGS = frozenset(
    {"transformers.GenerationConfig", "transformers.generation.GenerationConfig",
     "transformers.generation.configuration_utils.GenerationConfig"}
)
SPREAD_STEP = (
    'pass cache_implementation="static" to generate() (or set generation_config.cache_implementation): each '
    "decoding step then has the same shape; `**{spread}` may already choose a cache"
)


@register
class HfGenerateStaticCache(CudaRule):
    """``model.generate(...)`` in a Hugging Face script gets ``cache_implementation="static"``: the dynamic
    cache grows by a token per step, a new shape (so a compilation) each on the neuron device; the static cache
    is sized once from the generation length. A ``GenerationConfig(...)`` built in the script gets the same
    setting. A call that chooses its cache (``past_key_values``, ``use_cache``, ``cache_implementation``) or
    passes a ``generation_config`` (which holds the cache) is left; a ``**`` spread that
    may hold settings gets a TODO. ``x.generate`` is read as Hugging Face's when the file imports transformers,
    PEFT or TRL, defines no ``generate`` of its own, ``x`` is no imported name, and the call passes one of
    generate()'s own keywords or a tokenizer's output. A script that imports a generating model class of its own
    (``from utils.llama import MyLlamaForCausalLM``) gets a TODO: that model may keep a cache of its own."""

    meta = RuleMeta(
        "NM636",
        "generate() with a static KV cache",
        safety=REVIEW,
        risks=frozenset({"performance"}),
        summary=(
            'model.generate(...) and GenerationConfig(...) get cache_implementation="static": fixed shapes per '
            "decoding step."
        ),
        docs=(DOCS_NEURON_GENERATE, DOCS_STATIC_CACHE),
        triggers=(b"generate",),
        example=Example(
            before=(
                "from transformers import AutoModelForCausalLM\n\n"
                'model = AutoModelForCausalLM.from_pretrained("m")\n'
                "output = model.generate(**inputs, max_new_tokens=32)\n"
            ),
            after=(
                "from transformers import AutoModelForCausalLM\n\n"
                'model = AutoModelForCausalLM.from_pretrained("m")\n'
                f"# neuron-migrate(NM636): {STATIC_REVIEW}\n"
                'output = model.generate(**inputs, max_new_tokens=32, cache_implementation="static")\n'
            ),
        ),
    )

    calls = {qname: "generation_config" for qname in GENERATION_CONFIGS}

    def generation_config(self, original: cst.Call, updated: cst.Call, qname: str):
        """A ``GenerationConfig(...)`` built in the script: generate() reads its cache from there."""
        if any(a.keyword is not None and a.keyword.value in ("cache_implementation", "use_cache") for a in original.args):
            return updated
        if any(a.star for a in original.args) or self._own_model_class():
            # a spread may choose the cache; a model of the project's own may keep one (its generate() says so)
            return updated
        added = new_keyword("cache_implementation", '"static"')
        return Edit(with_args(updated, [*updated.args, added]), review=STATIC_REVIEW)

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        func = original.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "generate":
            return updated
        if not HUGGING_FACE_IMPORT.search(self.ctx.text) or not self._is_hugging_face(original):
            return updated
        if OWN_GENERATE.search(self.ctx.text) or root_name(func.value) in self.ctx.import_bound:
            # a generate() of the script's own (which may not take the keyword), or of an imported module
            return updated
        if any(a.keyword is not None and a.keyword.value in CACHE_KEYWORDS for a in original.args):
            return updated
        own_model = self._own_model_class()
        if own_model:
            self.ctx.manual(self.meta, original, OWN_MODEL_STEP.format(name=own_model))
            return updated
        spreads = [a for a in original.args if a.star == "**"]
        unread = [a for a in spreads if not INPUT_SPREAD.search(self.ctx.code(a.value))]
        if unread:
            self.ctx.manual(self.meta, original, SPREAD_STEP.format(spread=self.ctx.code(unread[0].value)))
            return updated
        added = new_keyword("cache_implementation", '"static"')
        return Edit(with_args(updated, [*updated.args, added]), review=STATIC_REVIEW)

    def _own_model_class(self) -> str:
        """A generating model class the file imports from outside transformers, PEFT and TRL (its own code)."""
        for statement in self.ctx.module.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if not isinstance(small, cst.ImportFrom) or isinstance(small.names, cst.ImportStar):
                    continue
                module = self.ctx.code(small.module) if small.module is not None else ""
                if not small.relative and module.split(".")[0] in ("transformers", "peft", "trl"):
                    continue
                for alias in small.names:
                    name = self.ctx.code(alias.name)
                    if GENERATING_MODEL.search(name):
                        return name
        return ""

    @staticmethod
    def _is_hugging_face(call: cst.Call) -> bool:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value in GENERATE_KEYWORDS:
                return True
            if arg.star == "**":
                return True
        return False
