"""optimum-neuron training -> stock Transformers, TRL, PEFT and Accelerate on the ``neuron`` device.

optimum-neuron wrapped each Hugging Face training class for the XLA stack (``NeuronTrainer``,
``NeuronTrainingArguments``, ``NeuronSFTTrainer``, ``NeuronAccelerator``, its own model classes and
``TrainingNeuronConfig``). On TorchNeuron the stock classes run natively: the Neuron device is part of
``TrainingArguments``, ``torch_compile_backend="neuron"`` compiles the step, and tensor parallelism is a
``transformers.distributed.DistributedConfig`` given where the model is built. This module renames
the classes, maps their arguments (tables in :mod:`neuron_migrate.rules.hf_fields`) and leaves a TODO
where a Neuron-only concept has no stock counterpart.

Sources: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/torchneuron-resources.html
(the HF libraries need no Neuron layer), the optimum-neuron 0.4.5 classes, and the TrainingArguments /
SFTConfig / DistributedConfig of the transformers and TRL releases that support the neuron device.
"""

from __future__ import annotations
