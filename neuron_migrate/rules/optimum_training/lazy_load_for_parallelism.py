"""NM214: `with lazy_load_for_parallelism(...):` unwrapped, its sizes passed to from_pretrained"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import REVIEW, Edit, Example, register, Rule, RuleMeta
from neuron_migrate.rules.calls import bind_args, literal
from neuron_migrate.rules.optimum_training.common import (
    DOCS_DISTRIBUTED,
    DOCS_DISTRIBUTED_CONFIG,
    LAZY_LOAD,
    LAZY_LOAD_PARAMS,
    TRIGGERS,
    _AddDistributedConfig,
    _count_loads,
)
from neuron_migrate.rules.xla_step.common import unwrap_with


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
            "The body runs as ordinary code. With a tensor-parallel size, the one from_pretrained in the block "
            "gets distributed_config=DistributedConfig(tp_size=N) (launch with torchrun); a pipeline-parallel size, "
            "or no single load to give it to, leaves the step in the marker."
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
        call = next(
            (
                item.item
                for item in original.items
                if isinstance(item.item, cst.Call) and self.ctx.any_qualified_name(item.item.func, LAZY_LOAD)
            ),
            None,
        )
        if call is None:
            return updated
        sizes = self._sizes(call)
        if sizes is None:
            return self._unwrapped(
                original,
                updated,
                "the parallel sizes are not readable here: pass distributed_config=DistributedConfig(tp_size=N) "
                "(transformers.distributed) to the model's from_pretrained and launch with torchrun",
            )
        if not sizes or not _count_loads(updated.body):
            return self._unwrapped(original, updated, "")  # nothing loaded here to shard
        tp = sizes.get("tp_size")
        if "pp_size" in sizes or tp is None or _count_loads(updated.body) != 1:
            return self._unwrapped(original, updated, self._next_step(sizes))
        config = self.ctx.require_from_import("transformers.distributed", "DistributedConfig")
        adder = _AddDistributedConfig(f"{config}(tp_size={tp})")
        body = updated.body.visit(adder)
        if not adder.added:
            return self._unwrapped(original, updated, self._next_step(sizes))
        count = tp if tp.isdigit() else f"`{tp}`"
        review = f"tensor parallel over {count} NeuronCores: launch with torchrun --nproc-per-node {count}"
        return self._unwrapped(original, updated.with_changes(body=body), review, manual=False)

    @staticmethod
    def _next_step(sizes: dict[str, str]) -> str:
        what = ", ".join(f"{k}={v}" for k, v in sizes.items())
        step = f"deleted lazy_load_for_parallelism, which sharded the model loaded here ({what}): "
        if "tp_size" in sizes:
            step += (
                f"pass distributed_config=DistributedConfig(tp_size={sizes['tp_size']}) (transformers.distributed) "
                "to the model's from_pretrained and launch with torchrun"
            )
        if "pp_size" in sizes:
            step += "; " if "tp_size" in sizes else ""
            step += "DistributedConfig has no pipeline stages: split the model with torch.distributed.pipelining"
        return step

    def _unwrapped(self, original: cst.With, updated: cst.With, message: str, manual: bool = True):
        new = unwrap_with(self, original, updated, LAZY_LOAD)
        if new is updated:
            return updated
        note = "`with lazy_load_for_parallelism(...)` removed: from_pretrained shards while loading"
        if not message:
            return Edit(new, message=note, safe=True)
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
