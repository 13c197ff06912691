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
