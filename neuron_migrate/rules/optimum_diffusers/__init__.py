"""optimum-neuron diffusion pipelines -> the stock diffusers pipelines on "neuron".

Each ``Neuron<Name>Pipeline`` subclassed the diffusers ``<Name>Pipeline`` and swapped its models for
compiled ones. Diffusers runs natively on TorchNeuron (Neuron docs, TorchNeuron resources), so the
stock class loads the checkpoint and moves to the device. optimum-neuron auto-cast matmuls to bf16 by
default, hence ``dtype=torch.bfloat16`` (``torch_dtype`` before diffusers deprecated it) unless the
call chose otherwise. Tensor parallelism is
diffusers' own (``enable_parallelism`` with a ``ParallelConfig``): only denoisers with a
tensor-parallel plan (the Flux transformer) can be sharded. Adapters compiled into the pipeline
(LoRA, ControlNet, IP-Adapter) load through diffusers' loader methods instead.
"""

from __future__ import annotations

from neuron_migrate.rules.optimum_diffusers.common import PIPELINES, TENSOR_PARALLEL_DENOISER

__all__ = [
    "PIPELINES",
    "TENSOR_PARALLEL_DENOISER",
]
