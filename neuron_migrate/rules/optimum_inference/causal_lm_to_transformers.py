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
    OPTIMUM_TRIGGERS,
)
from neuron_migrate.rules.optimum_inference.export_settings import INPUT_SHAPES, TENSOR_PARALLEL
from neuron_migrate.rules.optimum_inference.loader_index import LOADER_REGISTRY, Load, LoaderIndex
from neuron_migrate.rules.optimum_inference.model_loading import TransformersModelRule, _class_calls
from neuron_migrate.rules.optimum_inference.reading import Keyword, Reading
from neuron_migrate.rules.optimum_names import with_methods
from neuron_migrate.rules.xla_step.common import with_args


# get_neuron_config's and export's parameters in order (optimum-neuron 0.4.5 NeuronPreTrainedModel)
CONFIG_PARAMS = (
    "model_name_or_path", "config", "token", "revision", "instance_type", "batch_size", "sequence_length",
    "tensor_parallel_size",
)  # fmt: skip
EXPORT_POSITIONAL = ("model_id", "neuron_config")
# What get_neuron_config says about the compiled model that the load still has to know.
CONFIG_SETTINGS = frozenset({*INPUT_SHAPES, *TENSOR_PARALLEL, "instance_type"})
ALL_CORES = (
    "deleted the export, whose get_neuron_config names no tensor_parallel_size and so sharded the model over every "
    "NeuronCore of the instance: to keep that, pass distributed_config=DistributedConfig(tp_size=N) and launch "
    "with torchrun --nproc-per-node N; as written it loads on one NeuronCore"
)
# The same words whether or not an export in the file was migrated with this config's values (a rerun
# finds the export migrated already).
CONFIG_STEP = (
    "nothing is compiled ahead of time now: the model loads with `AutoModelForCausalLM.from_pretrained({model_id}, "
    'device_map="neuron")`, or with distributed_config=DistributedConfig(tp_size=N) under torchrun for a '
    "tensor_parallel_size N, and generates with a static KV cache of this batch size and sequence length; delete "
    "this call once nothing reads its result"
)

STATIC_CACHE = 'cache_implementation="static"'
VLLM = "for serving use vLLM's Neuron backend"


def _accepts_static_cache(call: cst.Call) -> bool:
    """A generate() call the keyword can be added to: no ``**kwargs`` (it could carry one too) and no
    cache of its own."""
    for arg in call.args:
        if arg.star == "**" or (arg.keyword is not None and arg.keyword.value == "past_key_values"):
            return False
    return True


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
            "export(model_id, neuron_config=...) migrates the same way with the settings of the get_neuron_config() "
            "call that made its config (deleted when nothing else reads it); a config this file does not make is "
            "left for a human with the load to write."
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
    loads = {
        **dict.fromkeys(with_methods(CAUSAL_LM, "from_pretrained", "export"), "load"),
        **dict.fromkeys(with_methods(CAUSAL_LM, "get_neuron_config"), "neuron_config"),
    }
    calls = {**_class_calls(targets), **loads}
    references = dict.fromkeys(CAUSAL_LM, "reference")

    def link(self, load: Load, index: LoaderIndex) -> None:
        """An ``export(model_id, neuron_config=...)`` takes its shapes and tensor parallelism from the
        ``get_neuron_config(...)`` call that made its neuron config (in place, or assigned to a name
        once in this file): it migrates as ``from_pretrained(model_id, export=True, **those)`` does."""
        method = load.qname.rsplit(".", 1)[1]
        if method != "export":
            # a get_neuron_config call loads no model: it only feeds an export
            load.migrates = load.migrates and method == "from_pretrained"
            return
        load.migrates = False
        reading = load.reading
        if reading is None or len(reading.positional) > len(EXPORT_POSITIONAL):
            return
        if not reading.positional and "model_id" not in reading.keywords:
            return
        if len(reading.positional) == len(EXPORT_POSITIONAL):
            expr = load.call.args[reading.positional[1]].value
        elif "neuron_config" in reading.keywords:
            expr = reading.keywords["neuron_config"].value
        else:
            return
        through, config = "", index.loads.get(id(expr))
        target = index.assigned_name(expr)
        if target is not None:
            line, value = index.scan.values[id(target)]
            through, config = target.value, index.loads.get(id(value))
        if config is None or config.rule is not self or config.reading is None or config.reading.unresolved:
            return
        if not config.qname.endswith(".get_neuron_config") or len(config.reading.positional) > len(CONFIG_PARAMS):
            return
        settings = {
            CONFIG_PARAMS[i]: Keyword(CONFIG_PARAMS[i], config.call.args[p].value)
            for i, p in enumerate(config.reading.positional)
        }
        settings.update(config.reading.keywords)
        # get_neuron_config's one default that does not depend on the checkpoint or the instance
        settings.setdefault("batch_size", Keyword("batch_size", cst.Integer("1")))
        merged = Reading(reading.positional[:1], dict(reading.keywords), reading.spreads, reading.unresolved)
        for name, keyword in settings.items():
            if name in CONFIG_SETTINGS:
                # Not written in the export: never passed on, only read (see Reading.rebuilt).
                merged.keywords.setdefault(name, Keyword(name, keyword.value, source="get_neuron_config()"))
        load.reading, load.linked, load.linked_through = merged, config, through
        load.migrates = not index.is_suppressed(self, load.call)
        if not load.migrates:
            return
        index.consumed.add(id(expr))
        if target is not None:
            why = f"`{through}` removed: it only described the export, and the load now passes its settings"
            index.delete_when_consumed(target, line, self, why)

    def shapes_review(self, shapes: dict[str, str]) -> str:
        limits = []
        if "batch_size" in shapes:
            limits.append(f"batch {shapes['batch_size']}")
        if "sequence_length" in shapes:
            limits.append(f"prompt + new tokens within {shapes['sequence_length']}")
        return f"static KV cache: keep {' and '.join(limits)}" if limits else ""

    def load(self, original: cst.Call, updated: cst.Call, qname: str):
        load = self.load_of(original)
        if qname.endswith(".export") and not load.migrates:
            return self.unread_export(original, updated)
        migrated = self.migrate_load(original, updated, qname)
        if migrated is None:
            return updated
        new, migration = migrated
        plan = self.static_cache_plan(load)
        review = migration.review
        if plan == "none":
            review.append(f"generate with {STATIC_CACHE}")
        if plan == "config":
            setting = f'{load.target}.generation_config.cache_implementation = "static"\n'
            self.follow_with(load, setting, "generate() uses a static KV cache: fixed shapes, one graph per length")
        if load.linked is not None and not set(load.reading.keywords) & set(TENSOR_PARALLEL):
            # get_neuron_config's default was every NeuronCore of the instance: a count this file does not say.
            todo = "; ".join([ALL_CORES, *review, VLLM])
            return Edit(new, message=migration.message, todo=todo)
        return Edit(new, message=migration.message, review="; ".join([*review, VLLM]))

    def neuron_config(self, original: cst.Call, updated: cst.Call, qname: str):
        """A ``get_neuron_config(...)`` call: gone with its line when the exports it fed migrated."""
        index = self.index()
        config = index.loads[id(original)]
        linked = [load for load in index.loads.values() if load.linked is config and load.migrates]
        if linked and (config.line is None or id(config.line) in index.deleted_lines):
            self.ctx.answered_by_enclosing_call()  # the export it feeds (or its deleted line) answers for it
            return updated
        self.ctx.manual(self.meta, original, CONFIG_STEP.format(model_id=_model_id(original)))
        return updated

    def unread_export(self, original: cst.Call, updated: cst.Call):
        """An export whose neuron config this file does not make: the TODO has the load to write."""
        config = "distributed_config=DistributedConfig(tp_size=<its tensor_parallel_size>)"
        load = f"AutoModelForCausalLM.from_pretrained({_model_id(original)}, {config})"
        step = (
            f"nothing is exported ahead of time now: load with `{load}`; launch with torchrun --nproc-per-node <that "
            f"size>; generate with {STATIC_CACHE}, batch and sequence length as the neuron config had them"
        )
        self.ctx.manual(
            self.meta, original, step, fix=f'model = {load}\nmodel.generation_config.cache_implementation = "static"'
        )
        return updated

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


def _model_id(call: cst.Call) -> str:
    """The code of the model id an export / get_neuron_config call names (first argument or keyword)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in ("model_id", "model_name_or_path"):
            return code_of(arg.value)
    first = call.args[0] if call.args else None
    return code_of(first.value) if first is not None and first.keyword is None and not first.star else "model_id"
