"""NM422: parallel layers -> nn layers + parallelize_module"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.calls import arg_value, bind_args, literal
from neuron_migrate.rules.neuronx_distributed.common import (
    CARRIED,
    DOCS_DISTRIBUTED,
    DOCS_TP,
    LAYERS,
    PLAN_SHORT,
    TRIGGERS,
    NxdRule,
    submodule_name,
)
from neuron_migrate.rules.neuronx_trace.common import LegacyUse
from neuron_migrate.rules.tables.neuronx_distributed import ROWS


@register
class ParallelLayersToTensorParallel(NxdRule):
    """ColumnParallelLinear / RowParallelLinear / ParallelEmbedding -> ``nn.Linear`` / ``nn.Embedding``
    sharded by a ``parallelize_module`` plan with ``ColwiseParallel`` / ``RowwiseParallel`` (DOCS_TP)."""

    meta = RuleMeta(
        "NM422",
        "parallel layers -> nn layers + parallelize_module",
        safety=MANUAL,
        risks=frozenset({"collectives", "numerics"}),
        summary=(
            "Tensor-parallel layers become plain nn.Linear / nn.Embedding; a parallelize_module plan on mesh[\"tp\"] "
            "shards them (ColwiseParallel / RowwiseParallel), DTensor places the collectives."
        ),
        docs=(DOCS_TP, DOCS_DISTRIBUTED),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import torch.nn as nn\n"
                "from neuronx_distributed.parallel_layers import RowParallelLinear\n\n\n"
                "class MLP(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.down = RowParallelLinear(4096, 1024, bias=False, input_is_parallel=True)\n"
            ),
            after=(
                "import torch.nn as nn\n"
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"RowParallelLinear in order: {PLAN_SHORT}\n"
                "from neuronx_distributed.parallel_layers import RowParallelLinear\n\n\n"
                "class MLP(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        # TODO(neuron-migrate NM422): use `nn.Linear(4096, 1024, bias=False)`; shard it with "
                '`parallelize_module(model, mesh["tp"], {"<path>.down": RowwiseParallel()})`\n'
                "        self.down = RowParallelLinear(4096, 1024, bias=False, input_is_parallel=True)\n"
            ),
        ),
    )
    apis = {name: "layer" for name in LAYERS}
    rows = ROWS

    def layer(self, original, updated, use: LegacyUse, api: str):
        stock, style, params = LAYERS[api]
        bound = bind_args(original, params, other_keywords=True) if isinstance(original, cst.Call) else None
        if bound is None or params[0] not in bound or params[1] not in bound:
            self.ctx.manual(
                self.meta, original, f"replace {api} with `{stock}` sharded by `{style}()` in a parallelize_module plan"
            )
            return updated
        args = [code_of(bound[params[0]].value), code_of(bound[params[1]].value)]
        keywords = {arg.keyword.value: arg.value for arg in original.args if arg.keyword is not None}
        if "bias" in bound:
            keywords["bias"] = bound["bias"].value
        args += [f"{name}={code_of(keywords[name])}" for name in CARRIED if name in keywords]
        layer = f"{stock}({', '.join(args)})"
        name = submodule_name(self, original)
        key = f"<path>.{name}" if name else "<fqn>"
        plan = f'parallelize_module(model, mesh["tp"], {{"{key}": {self._style(api, style, bound, keywords)}}})'
        self.ctx.manual(self.meta, original, f"use `{layer}`; shard it with `{plan}`")
        return updated

    @staticmethod
    def _style(api: str, style: str, bound: dict[str, cst.Arg], keywords) -> str:
        # NxD gathered a column-parallel output and split a row-parallel input unless told otherwise;
        # with DTensor that is a replicated output / input layout.
        if api == "ParallelEmbedding" and literal(keywords.get("shard_across_embedding")) is True:
            return "ColwiseParallel()"  # sharded along the embedding dimension, not the vocabulary
        if api == "ColumnParallelLinear" and arg_value(bound, "gather_output", default=True) is not False:
            return f"{style}(output_layouts=Replicate())"
        if api == "RowParallelLinear" and arg_value(bound, "input_is_parallel", default=False) is not True:
            return f"{style}(input_layouts=Replicate())"
        return style + "()"
