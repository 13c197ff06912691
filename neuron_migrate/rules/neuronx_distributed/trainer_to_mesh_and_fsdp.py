"""NM429: NxD trainer config -> DeviceMesh + parallelize_module + fully_shard"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.calls import arg_value, bind_args, receiver
from neuron_migrate.rules.neuronx_distributed.common import (
    CONFIG_PARTS,
    DOCS_FSDP2,
    DOCS_MESH,
    DOCS_TP,
    PARALLEL_MODEL,
    PLAN_SHORT,
    TRIGGERS,
    NxdRule,
    build_mesh,
    size_code,
)
from neuron_migrate.rules.neuronx_trace.common import LegacyUse
from neuron_migrate.rules.tables.neuronx_distributed import ROWS


@register
class TrainerToMeshAndFsdp(NxdRule):
    """neuronx_distributed_config / initialize_parallel_model -> a DeviceMesh, a ``parallelize_module``
    plan and ``fully_shard`` (DOCS_MESH, DOCS_TP, DOCS_FSDP2)."""

    meta = RuleMeta(
        "NM429",
        "NxD trainer config -> DeviceMesh + parallelize_module + fully_shard",
        safety=MANUAL,
        risks=frozenset({"collectives", "launch"}),
        summary=(
            "The NxD config and parallel-model wrapper become explicit code: a DeviceMesh, a parallelize_module plan "
            "for tensor parallelism and fully_shard for data parallelism."
        ),
        docs=(DOCS_MESH, DOCS_TP, DOCS_FSDP2),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import neuronx_distributed as nxd\n\n"
                "config = nxd.neuronx_distributed_config(tensor_parallel_size=8, optimizer_config=zero1)\n"
                "model = nxd.initialize_parallel_model(config, build_model, model_config)\n"
            ),
            after=(
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"neuronx_distributed_config, initialize_parallel_model in order: {PLAN_SHORT}\n"
                "import neuronx_distributed as nxd\n\n"
                f"# TODO(neuron-migrate NM429): replace the config with a DeviceMesh: {build_mesh('8')}; "
                f"{CONFIG_PARTS['optimizer_config']}\n"
                "config = nxd.neuronx_distributed_config(tensor_parallel_size=8, optimizer_config=zero1)\n"
                "# TODO(neuron-migrate NM429): build the model yourself (`model = build_model(model_config)`), then "
                '`parallelize_module(model, mesh["tp"], plan)` and `fully_shard(model, mesh=mesh["dp"])`\n'
                "model = nxd.initialize_parallel_model(config, build_model, model_config)\n"
            ),
        ),
    )
    apis = {"neuronx_distributed_config": "config", "initialize_parallel_model": "parallel_model"}
    rows = ROWS

    def config(self, original, updated, use: LegacyUse, api: str):
        bound = {}
        if isinstance(original, cst.Call):
            bound = bind_args(original, ("tensor_parallel_size", "pipeline_parallel_size"), other_keywords=True) or {}
            passed = {arg.keyword.value for arg in original.args if arg.keyword is not None} | set(bound)
        else:
            passed = set()
        parts = [f"replace the config with a DeviceMesh: {build_mesh(size_code(bound, 'tensor_parallel_size', 'tp'))}"]
        if arg_value(bound, "pipeline_parallel_size", default=1) == 1:
            passed.discard("pipeline_parallel_size")
        parts += list(dict.fromkeys(text for name, text in CONFIG_PARTS.items() if name in passed))
        self.ctx.manual(self.meta, original, "; ".join(parts))
        return updated

    def parallel_model(self, original, updated, use: LegacyUse, api: str):
        call = original if isinstance(original, cst.Call) else None
        plain = call is not None and len(call.args) >= 2 and all(a.keyword is None and not a.star for a in call.args)
        if not plain:
            self.ctx.manual(self.meta, original, PARALLEL_MODEL)
            return updated
        model_args = ", ".join(code_of(arg.value) for arg in call.args[2:])
        built = f"model = {receiver(call.args[1].value)}({model_args})"
        if "\n" in built or len(built) > 80:
            built = f"model = {receiver(call.args[1].value)}(...)"
        self.ctx.manual(
            self.meta,
            original,
            PARALLEL_MODEL.replace("build the model yourself", f"build the model yourself (`{built}`)", 1),
        )
        return updated
