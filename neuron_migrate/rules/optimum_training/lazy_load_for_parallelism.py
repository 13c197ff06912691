"""NM214: `with lazy_load_for_parallelism(...):` unwrapped, its sizes passed to from_pretrained"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import REVIEW, Edit, Example, register, Rule, RuleMeta
from neuron_migrate.rules.calls import bind_args, literal, new_keyword
from neuron_migrate.rules.optimum_training.classes import LAZY_LOAD
from neuron_migrate.rules.optimum_training.common import DOCS_DISTRIBUTED, DOCS_DISTRIBUTED_CONFIG, TRIGGERS
from neuron_migrate.rules.optimum_training.script_facts import _nodes
from neuron_migrate.rules.optimum_training.script_scan import script_facts
from neuron_migrate.rules.xla_step.common import unwrap_with, with_args

LAZY_LOAD_PARAMS = ("tensor_parallel_size", "pipeline_parallel_size")


class _AddDistributedConfig(cst.CSTTransformer):
    """``distributed_config=...`` on the ``from_pretrained`` calls that choose no placement."""

    def __init__(self, code: str) -> None:
        super().__init__()
        self.code = code
        self.added = 0

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if not _is_model_load(updated):
            return updated
        if any(arg.keyword is not None and arg.keyword.value in ("distributed_config", "device_map") for arg in updated.args):
            return updated
        if any(arg.star for arg in updated.args):
            return updated  # a **kwargs may place the model already
        self.added += 1
        return with_args(updated, [*updated.args, new_keyword("distributed_config", self.code)])


# ``<Class>.from_pretrained`` loads that are not the model: nothing to shard.
NOT_MODELS = ("Tokenizer", "Processor", "Config", "FeatureExtractor")


def _is_model_load(call: cst.Call, method: str = "from_pretrained") -> bool:
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == method):
        return False
    owner = code_of(func.value).rsplit(".", 1)[-1]
    return not any(word in owner for word in NOT_MODELS)


def _count_loads(node: cst.CSTNode) -> int:
    return sum(1 for child in _nodes(node) if isinstance(child, cst.Call) and _is_model_load(child))


def _count_builds(node: cst.CSTNode) -> int:
    """``<Model>.from_config(...)`` calls: a model built without weights, which no DistributedConfig shards."""
    return sum(1 for child in _nodes(node) if isinstance(child, cst.Call) and _is_model_load(child, "from_config"))


@register
class LazyLoadForParallelism(Rule):
    """optimum-neuron <= 0.1 ``with lazy_load_for_parallelism(tensor_parallel_size=N):`` kept the weights
    on the meta device until its parallelizer sharded them. Now from_pretrained shards while loading
    when given ``distributed_config=DistributedConfig(tp_size=N)``; without it the model would load
    whole on every rank (tensor parallelism silently turned into data parallelism)."""

    meta = RuleMeta(
        "NM214",
        "`with lazy_load_for_parallelism(...):` unwrapped, its sizes passed to from_pretrained",
        safety=REVIEW,
        risks=frozenset({"collectives", "performance"}),
        summary=(
            "The body runs as ordinary code. With parallel sizes, the one from_pretrained in the block gets "
            "distributed_config=DistributedConfig(tp_size=N, pp_size=M) (launch with torchrun); a from_config "
            "(which takes no DistributedConfig), several loads, or sizes read from a field the migrated arguments "
            "lack leave a TODO with the step; a block without from_pretrained gets a review marker. Only a size "
            "of 1 is removed without a word."
        ),
        docs=(DOCS_DISTRIBUTED_CONFIG, DOCS_DISTRIBUTED),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron.distributed import lazy_load_for_parallelism\n\n"
                "with lazy_load_for_parallelism(tensor_parallel_size=8):\n"
                "    model = AutoModelForCausalLM.from_pretrained(model_id)\n"
            ),
            after=(
                "from transformers.distributed import DistributedConfig\n\n"
                "# neuron-migrate(NM214): tensor parallel over 8 NeuronCores: launch with torchrun --nproc-per-node 8\n"
                "model = AutoModelForCausalLM.from_pretrained(model_id, distributed_config=DistributedConfig(tp_size=8))\n"
            ),
        ),
    )

    def leave_With(self, original: cst.With, updated: cst.With):
        position = next(
            (
                index
                for index, item in enumerate(original.items)
                if isinstance(item.item, cst.Call) and self.ctx.any_qualified_name(item.item.func, LAZY_LOAD)
            ),
            None,
        )
        if position is None:
            return updated
        gone = self._missing_field(original.items[position].item)
        if gone:
            return self._unwrapped(original, updated, f"deleted lazy_load_for_parallelism: {gone}")
        # the updated call: a size read from the legacy arguments may already read the script's own ones
        sizes = self._sizes(updated.items[position].item)
        if sizes is None:
            return self._unwrapped(
                original,
                updated,
                "the parallel sizes are not readable here: pass distributed_config=DistributedConfig(tp_size=N) "
                "(transformers.distributed) to the model's from_pretrained and launch with torchrun",
            )
        if not sizes:
            return self._unwrapped(original, updated, "")  # it asked for no parallelism
        loads, builds = _count_loads(updated.body), _count_builds(updated.body)
        if builds:
            return self._unwrapped(original, updated, self._from_config_step(sizes))
        if not loads:
            return self._unwrapped(original, updated, self._no_load_step(sizes), manual=False)
        if loads != 1:
            return self._unwrapped(original, updated, self._next_step(sizes))
        config = self.ctx.require_from_import("transformers.distributed", "DistributedConfig")
        arguments = ", ".join(f"{k}={v}" for k, v in sizes.items())
        adder = _AddDistributedConfig(f"{config}({arguments})")
        body = updated.body.visit(adder)
        if not adder.added:
            return self._unwrapped(original, updated, self._next_step(sizes))
        return self._unwrapped(original, updated.with_changes(body=body), self._launch(sizes), sharded=True)

    @staticmethod
    def _launch(sizes: dict[str, str]) -> str:
        counts = {k: v if v.isdigit() else f"`{v}`" for k, v in sizes.items()}
        if "pp_size" not in counts:
            tp = counts["tp_size"]
            return f"tensor parallel over {tp} NeuronCores: launch with torchrun --nproc-per-node {tp}"
        parts = [f"tensor parallel over {counts['tp_size']}"] if "tp_size" in counts else []
        parts.append(f"pipeline parallel over {counts['pp_size']} stages")
        return f"{' and '.join(parts)}: launch with torchrun, one process per NeuronCore of each model replica"

    def _missing_field(self, call: cst.Call) -> str:
        """Why a size cannot move: it reads a field the migrated arguments lack (the NM221 TODO of the read)."""
        reads = script_facts(self.ctx).fields.reads
        for arg in call.args:
            for node in _nodes(arg.value):
                read = reads.get(id(node))
                if read is not None and read.todo:
                    return read.todo
        return ""

    @staticmethod
    def _next_step(sizes: dict[str, str]) -> str:
        what = ", ".join(f"{k}={v}" for k, v in sizes.items())
        return (
            f"deleted lazy_load_for_parallelism, which sharded the model loaded here ({what}): pass "
            f"distributed_config=DistributedConfig({what}) (transformers.distributed) to the model's from_pretrained "
            "and launch with torchrun"
        )

    @staticmethod
    def _from_config_step(sizes: dict[str, str]) -> str:
        what = ", ".join(f"{k}={v}" for k, v in sizes.items())
        return (
            f"deleted lazy_load_for_parallelism, which sharded the model from_config builds here ({what}): "
            "from_config takes no distributed_config; load the weights with "
            f"from_pretrained(..., distributed_config=DistributedConfig({what})) (transformers.distributed), or shard "
            "the model yourself with torch.distributed.tensor.parallel.parallelize_module"
        )

    @staticmethod
    def _no_load_step(sizes: dict[str, str]) -> str:
        what = ", ".join(f"{k}={v}" for k, v in sizes.items())
        return (
            f"lazy_load_for_parallelism({what}) removed, and nothing in its block calls from_pretrained: if a call "
            f"here builds the model, give its from_pretrained distributed_config=DistributedConfig({what})"
        )

    def _unwrapped(
        self, original: cst.With, updated: cst.With, message: str, manual: bool = True, sharded: bool = False
    ):
        new = unwrap_with(self, original, updated, LAZY_LOAD)
        if new is updated:
            return updated
        note = "`with lazy_load_for_parallelism(...)` removed"
        if not message:
            return Edit(new, message=f"{note}: it asked for no parallelism", safe=True)
        if sharded:
            return Edit(new, message=f"{note}: from_pretrained shards while loading", review=message)
        if manual:
            return Edit(new, message=note, todo=message)
        return Edit(new, message=note, review=message)

    @staticmethod
    def _sizes(call: cst.Call) -> dict[str, str] | None:
        """DistributedConfig sizes (tp_size, pp_size) that are not 1, as code; None when unreadable."""
        bound = bind_args(call, LAZY_LOAD_PARAMS)
        if bound is None:
            return None
        sizes = {}
        for param, size in zip(LAZY_LOAD_PARAMS, ("tp_size", "pp_size")):
            arg = bound.get(param)
            if arg is not None and literal(arg.value, single_token=True) != 1:
                sizes[size] = code_of(arg.value).strip()
        return sizes
