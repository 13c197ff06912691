"""SageMaker jobs and endpoints of the XLA era: their container images and instance types (NM540, NM541).

A notebook or deploy script names the Neuron Deep Learning Container its job runs in
(``763104351884.dkr.ecr.<region>.amazonaws.com/pytorch-training-neuronx:2.1.2-neuronx-...``,
``image_uris.retrieve("huggingface-neuronx", ...)``, ``get_huggingface_llm_image_uri("huggingface-neuronx")``)
and the instance it runs on (``instance_type="ml.trn1.32xlarge"``). Those images hold the PyTorch/XLA
stack (or optimum-neuron on it), and TorchNeuron runs on Trn2 and Trn3 only: the migrated code would
start in a container without TorchNeuron, or on an instance TorchNeuron does not support. Nothing is
rewritten, since no image or instance type is a drop-in replacement; each gets a TODO naming what
TorchNeuron runs in and on.

Sources: the Neuron 2.33 setup pages (TorchNeuron: Trn2 and Trn3, PyTorch 2.13/2.14; its DLCs: a
TorchNeuron training image and the vLLM inference image) and the aws-neuron/deep-learning-containers
image tables.
"""

from __future__ import annotations

