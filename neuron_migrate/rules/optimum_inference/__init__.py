"""optimum-neuron inference: compiled Neuron models and pipelines -> stock Transformers on "neuron".

optimum-neuron exported a model ahead of time for fixed input shapes (``export=True, batch_size=1,
sequence_length=128``) and then ran the compiled artifact. On TorchNeuron the stock Transformers class
loads the original checkpoint onto the device (``device_map="neuron"``) and compiles as it runs, so
the export settings go: the input shapes become a promise the caller keeps by padding, the cast
settings become the load ``dtype``, and a core count becomes tensor parallelism over torchrun ranks
(``DistributedConfig``). Transformers, Diffusers and PEFT run natively on TorchNeuron (Neuron docs,
TorchNeuron resources); the class and keyword tables follow the optimum-neuron 0.4.5 sources.

A ``**settings`` spread whose dict is a literal assigned in the file is read as if its keys were
written in the call; the dict assignment goes when nothing else reads it. ``optimum_diffusers``
builds on the same reading for the diffusion pipelines.
"""

from __future__ import annotations

from neuron_migrate.rules.optimum_inference.common import TASK_MODELS

__all__ = [
    "TASK_MODELS",
]
