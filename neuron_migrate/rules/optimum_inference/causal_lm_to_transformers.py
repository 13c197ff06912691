"""NM302: NeuronModelForCausalLM -> AutoModelForCausalLM with a static KV cache"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import REVIEW, Edit, Example, RuleMeta, register
from neuron_migrate.rules.calls import new_keyword
from neuron_migrate.rules.optimum_inference.common import (
    CAUSAL_LM,
    DOCS_HF_INFERENCE,
    DOCS_NO_XLA_INFERENCE,
    DOCS_STATIC_CACHE,
    LOADER_REGISTRY,
    OPTIMUM_TRIGGERS,
    STATIC_CACHE,
    VLLM,
    Load,
    TransformersModelRule,
    _accepts_static_cache,
    _class_calls,
)
from neuron_migrate.rules.optimum_names import with_methods
from neuron_migrate.rules.xla_step.common import with_args


@register
class CausalLMToTransformers(TransformersModelRule):
    """``NeuronModelForCausalLM`` -> ``AutoModelForCausalLM`` on ``device_map="neuron"`` with a static
    KV cache, so ``generate`` runs fixed shapes (transformers static-cache guide; Neuron HF inference
    tutorial). Serving moves to vLLM's Neuron backend (XLA inference is unsupported on Trn2/Trn3)."""

    meta = RuleMeta(
        "NM302",
        "NeuronModelForCausalLM -> AutoModelForCausalLM with a static KV cache",
        safety=REVIEW,
        risks=frozenset({"performance", "checkpoint-format"}),
        summary=(
            "Loads the original checkpoint with AutoModelForCausalLM on the neuron device; generate() gets "
            'cache_implementation="static" (or the model\'s generation_config does). batch_size/sequence_length '
            "become limits named in the marker; num_cores / tensor_parallel_size becomes DistributedConfig. "
            "get_neuron_config()/export() are left for a human with the code to write."
        ),
        docs=(DOCS_STATIC_CACHE, DOCS_HF_INFERENCE, DOCS_NO_XLA_INFERENCE),
        triggers=OPTIMUM_TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron import NeuronModelForCausalLM\n\n"
                "model = NeuronModelForCausalLM.from_pretrained(\n"
                '    "meta-llama/Llama-3.2-1B", export=True, batch_size=1, sequence_length=4096, num_cores=2,\n'
                '    auto_cast_type="bf16",\n'
                ")\n"
                "tokens = model.generate(input_ids, max_new_tokens=64)\n"
            ),
            after=(
                "import torch\n"
                "from transformers import AutoModelForCausalLM\n"
                "from transformers.distributed import DistributedConfig\n\n"
                "# neuron-migrate(NM302): tensor parallel over 2 NeuronCores: launch with torchrun --nproc-per-node "
                "2; static KV cache: keep batch 1 and prompt + new tokens within 4096; for serving use vLLM's "
                "Neuron backend\n"
                "model = AutoModelForCausalLM.from_pretrained(\n"
                '    "meta-llama/Llama-3.2-1B", dtype=torch.bfloat16, '
                "distributed_config=DistributedConfig(tp_size=2),\n"
                ")\n"
                'tokens = model.generate(input_ids, max_new_tokens=64, cache_implementation="static")\n'
            ),
        ),
    )
    targets = dict.fromkeys(CAUSAL_LM, "AutoModelForCausalLM")
    gated_cast = False
    loads = dict.fromkeys(with_methods(CAUSAL_LM, "from_pretrained"), "load")
    calls = {
        **_class_calls(targets, get_neuron_config="ahead_of_time", export="ahead_of_time"),
        **loads,
    }
    references = dict.fromkeys(CAUSAL_LM, "reference")

    def shapes_review(self, shapes: dict[str, str]) -> str:
        limits = []
        if "batch_size" in shapes:
            limits.append(f"batch {shapes['batch_size']}")
        if "sequence_length" in shapes:
            limits.append(f"prompt + new tokens within {shapes['sequence_length']}")
        return f"static KV cache: keep {' and '.join(limits)}" if limits else ""

    def load(self, original: cst.Call, updated: cst.Call, qname: str):
        migrated = self.migrate_load(original, updated, qname)
        if migrated is None:
            return updated
        new, migration = migrated
        load = self.load_of(original)
        plan = self.static_cache_plan(load)
        review = migration.review
        if plan == "none":
            review.append(f"generate with {STATIC_CACHE}")
        if plan == "config":
            setting = f'{load.target}.generation_config.cache_implementation = "static"\n'
            self.follow_with(load, setting, "generate() uses a static KV cache: fixed shapes, one graph per length")
        return Edit(new, message=migration.message, review="; ".join([*review, VLLM]))

    def static_cache_plan(self, load: Load) -> str:
        """"generate": add the keyword to the model's generate() calls; "config": set it on the
        model's generation_config after the load; "none": neither can be done here."""
        sites = self.index().method_calls(load, "generate")
        if sites and all(_accepts_static_cache(site) for site in sites):
            return "generate"
        if load.line is not None and load.target:
            return "config"
        return "none"

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        if not self.ctx.fact(LOADER_REGISTRY) or not isinstance(original.func, cst.Attribute):
            return updated
        if original.func.attr.value != "generate":
            return updated
        load = self.index().methods.get(id(original))
        if load is None or load.rule is not self or not load.migrates or self.static_cache_plan(load) != "generate":
            return updated
        if any(arg.keyword is not None and arg.keyword.value == "cache_implementation" for arg in original.args):
            return updated
        static = with_args(updated, [*updated.args, new_keyword("cache_implementation", '"static"')])
        note = "generate() uses a static KV cache: fixed shapes, one compiled graph per length"
        return Edit(static, message=note, safe=True)

    def ahead_of_time(self, original: cst.Call, updated: cst.Call, qname: str):
        model_id = code_of(original.args[0].value) if original.args and not original.args[0].star else "model_id"
        self.ctx.manual(
            original,
            "nothing is exported ahead of time now: load with `AutoModelForCausalLM.from_pretrained("
            f'{model_id}, dtype=torch.bfloat16, device_map="neuron")` and generate with {STATIC_CACHE}',
            fix=(
                f'model = AutoModelForCausalLM.from_pretrained({model_id}, dtype=torch.bfloat16, device_map="neuron")\n'
                'model.generation_config.cache_implementation = "static"'
            ),
        )
        return updated
