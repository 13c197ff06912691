"""Debugging: the PyTorch/XLA metrics and profiler modules.

TorchNeuron has its own metrics module (``torch_neuronx.metrics``, off unless enabled) with the
same shape of API and differently named counters, and profiles through ``torch.profiler`` viewed in Neuron
Explorer; the XLA profiler server and its trace annotations have no drop-in equivalent.
"""

from __future__ import annotations
