"""torch-neuronx's XLA-era APIs: ahead-of-time tracing, its saved artifacts and the helpers around them.

``torch_neuronx.trace`` compiled a model for fixed example inputs into a TorchScript module holding a
NEFF, which scripts saved with ``torch.jit.save`` and loaded back with ``torch.jit.load``. On
TorchNeuron the model runs on device ``"neuron"`` and ``torch.compile(backend="neuron")`` compiles it
on its first call; there is no serialized compiled artifact, the NEFF cache keeps the compile work.
The rest of the XLA-era surface (DataParallel, analyze, weight loading helpers, core placement,
``xla_impl``) has no counterpart and gets a marker with the stock-PyTorch way to do the same thing.

``import torch_neuronx`` itself is not legacy: TorchNeuron ships under the same package name.

Sources: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html
and the torch-neuronx trace API reference.
"""

from __future__ import annotations

from neuron_migrate.rules.neuronx_trace.analyze_to_fallback_ops import AnalyzeToFallbackOps
from neuron_migrate.rules.neuronx_trace.core_placement import CorePlacement
from neuron_migrate.rules.neuronx_trace.data_parallel_to_processes import DataParallelToProcesses
from neuron_migrate.rules.neuronx_trace.device_count import DeviceCount
from neuron_migrate.rules.neuronx_trace.libneuronxla_removed import LibneuronxlaRemoved
from neuron_migrate.rules.neuronx_trace.nki_jit_to_nki_op import NkiJitToNkiOp
from neuron_migrate.rules.neuronx_trace.other_xla_era_api import OtherXlaEraApi
from neuron_migrate.rules.neuronx_trace.trace_to_compile import TraceToCompile
from neuron_migrate.rules.neuronx_trace.traced_artifacts import TracedArtifacts
from neuron_migrate.rules.neuronx_trace.traced_model_helpers import TracedModelHelpers
from neuron_migrate.rules.neuronx_trace.xla_era_distributed import XlaEraDistributed

__all__ = [
    "AnalyzeToFallbackOps",
    "CorePlacement",
    "DataParallelToProcesses",
    "DeviceCount",
    "LibneuronxlaRemoved",
    "NkiJitToNkiOp",
    "OtherXlaEraApi",
    "TraceToCompile",
    "TracedArtifacts",
    "TracedModelHelpers",
    "XlaEraDistributed",
]
