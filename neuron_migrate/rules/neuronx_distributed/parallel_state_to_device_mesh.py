"""NM421: parallel_state -> DeviceMesh"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.calls import arg_value, bind_args
from neuron_migrate.rules.neuronx_distributed.common import (
    DOCS_DISTRIBUTED,
    DOCS_MESH,
    DOCS_PIPELINING,
    INIT_PARAMS,
    PLAN_SHORT,
    TRIGGERS,
    NxdRule,
    build_mesh,
    size_code,
)
from neuron_migrate.rules.neuronx_trace.common import LegacyUse
from neuron_migrate.rules.tables.neuronx_distributed import ROWS


@register
class ParallelStateToDeviceMesh(NxdRule):
    """``parallel_state`` process groups -> a DeviceMesh (``init_device_mesh("neuron", ...)``,
    DOCS_MESH) whose dimensions give ranks, sizes and groups; pipeline stages come from
    torch.distributed.pipelining (DOCS_PIPELINING)."""

    meta = RuleMeta(
        "NM421",
        "parallel_state -> DeviceMesh",
        safety=MANUAL,
        risks=frozenset({"collectives"}),
        summary=(
            'initialize_model_parallel becomes init_device_mesh("neuron", (dp, tp), mesh_dim_names=("dp", "tp")); '
            'rank, size and group queries read mesh["tp"] / mesh["dp"].'
        ),
        docs=(DOCS_MESH, DOCS_DISTRIBUTED, DOCS_PIPELINING),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from neuronx_distributed.parallel_layers import parallel_state\n\n"
                "def setup():\n"
                "    parallel_state.initialize_model_parallel(tensor_model_parallel_size=8)\n"
                "    return parallel_state.get_tensor_model_parallel_rank()\n"
            ),
            after=(
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"initialize_model_parallel, get_tensor_model_parallel_rank in order: {PLAN_SHORT}\n"
                "from neuronx_distributed.parallel_layers import parallel_state\n\n"
                "def setup():\n"
                f"    # TODO(neuron-migrate NM421): build a DeviceMesh instead: {build_mesh('8')} "
                "(torch.distributed.device_mesh)\n"
                "    parallel_state.initialize_model_parallel(tensor_model_parallel_size=8)\n"
                "    # TODO(neuron-migrate NM421): read it from the DeviceMesh: `mesh[\"tp\"].get_local_rank()`\n"
                "    return parallel_state.get_tensor_model_parallel_rank()\n"
            ),
        ),
    )
    apis = {"initialize_model_parallel": "initialize"}
    rows = ROWS

    def initialize(self, original, updated, use: LegacyUse, api: str):
        call = original if isinstance(original, cst.Call) else None
        bound = (bind_args(call, INIT_PARAMS, other_keywords=True) if call is not None else None) or {}
        message = f"build a DeviceMesh instead: {build_mesh(size_code(bound, 'tensor_model_parallel_size', 'tp'))}"
        message += " (torch.distributed.device_mesh)"
        if arg_value(bound, "pipeline_model_parallel_size", default=1) != 1:
            message += "; pipeline stages: torch.distributed.pipelining"
        self.ctx.manual(self.meta, original, message)
        return updated
