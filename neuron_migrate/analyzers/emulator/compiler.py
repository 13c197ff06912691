"""``torch.compile(backend="neuron")`` on the emulator: records every graph, then runs it on the host.

Like the device's backend it refuses ``dynamic=True``. What runs is chosen by ``NEURON_EMULATOR_COMPILE``:
``eager`` (default: the captured graph runs op by op on neuron tensors), ``aot_eager`` (AOTAutograd forward and
backward graphs, also recorded) or ``inductor`` (the AOT graphs compiled for the CPU).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch


@dataclass
class RecordedGraph:
    """One graph handed to the backend: ``kind`` is dynamo, forward or backward."""

    kind: str
    graph_module: torch.fx.GraphModule

    @property
    def op_count(self) -> int:
        return sum(1 for node in self.graph_module.graph.nodes if node.op == "call_function")


GRAPHS: list[RecordedGraph] = []


class DynamicShapesRefused(RuntimeError):
    pass


def _dynamic_requested() -> bool:
    import torch._dynamo.config as config

    return not config.assume_static_by_default


def neuron_backend(gm: torch.fx.GraphModule, example_inputs):
    if _dynamic_requested():
        raise DynamicShapesRefused(
            'the neuron backend compiles static shapes only: use torch.compile(..., backend="neuron", dynamic=False)'
        )
    GRAPHS.append(RecordedGraph("dynamo", gm))
    mode = os.environ.get("NEURON_EMULATOR_COMPILE", "eager")
    if mode == "eager":
        return gm.forward
    from torch._dynamo.backends.common import aot_autograd

    def recorder(kind):
        def compile_graph(graph, inputs):
            GRAPHS.append(RecordedGraph(kind, graph))
            if mode == "inductor":
                from torch._inductor.compile_fx import compile_fx_inner

                return compile_fx_inner(graph, inputs)
            return graph.forward

        return compile_graph

    return aot_autograd(fw_compiler=recorder("forward"), bw_compiler=recorder("backward"))(gm, example_inputs)


def install() -> None:
    from torch._dynamo.backends.registry import _BACKENDS, register_backend

    if "neuron" not in _BACKENDS:
        register_backend(neuron_backend, name="neuron")
