"""neuronx_distributed (NxD Core / NxD Training): model surgery onto stock torch.distributed.

NxD's parallel layers, parallel_state groups, ZeRO-1 optimizer, pipeline engine, trainer helpers and
checkpoint format are end-of-support on TorchNeuron; AWS points to DTensor, FSDP2 and DDP, which
run on the ``"neuron"`` process-group backend. None of that is a rename: a tensor-parallel model is
rebuilt from plain ``nn`` layers plus a ``parallelize_module`` plan on a DeviceMesh. So every use is
marked with the concrete next step, and each file gets one summary of the whole job (NM420). Two
APIs translate directly: ``move_model_to_device`` and a ``LoraConfig`` written with peft's arguments.

NxD exports names from several module paths, so uses are matched by API name under the
``neuronx_distributed`` package, not by one exact import path.

Sources: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html,
the NxD end-of-support announcement and the PyTorch DeviceMesh / tensor-parallel / FSDP2 / DCP /
pipelining docs.
"""

from __future__ import annotations

from neuron_migrate.rules.neuronx_distributed.common import owner

__all__ = [
    "owner",
]
