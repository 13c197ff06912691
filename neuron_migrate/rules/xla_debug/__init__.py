"""Debugging: the PyTorch/XLA metrics and profiler modules.

TorchNeuron has its own metrics module (``torch_neuronx.metrics``, off unless enabled) with the
same shape of API and differently named counters, and profiles through ``torch.profiler`` viewed in Neuron
Explorer; the XLA profiler server and its trace annotations have no drop-in equivalent.
"""

from __future__ import annotations

from neuron_migrate.rules.xla_debug.xla_metrics_to_neuron import XlaMetricsToNeuron
from neuron_migrate.rules.xla_debug.xla_profiler_manual import XlaProfilerManual
from neuron_migrate.rules.xla_debug.xla_trace_to_record_function import XlaTraceToRecordFunction

__all__ = [
    "XlaMetricsToNeuron",
    "XlaProfilerManual",
    "XlaTraceToRecordFunction",
]
