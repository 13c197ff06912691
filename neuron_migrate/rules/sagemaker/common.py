"""What the sagemaker rules share: the sources, and the text of a string literal."""

from __future__ import annotations

import libcst as cst

NEURON_DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest"
DOCS_SETUP = f"{NEURON_DOCS}/setup/pytorch/index.html"
DOCS_DLC = f"{NEURON_DOCS}/setup/pytorch/dlc.html"
DLC_IMAGES = "https://github.com/aws-neuron/deep-learning-containers"
# What every marker says TorchNeuron needs, from the Neuron 2.33 setup pages.
TORCH_NEURON_HARDWARE = "TorchNeuron runs on Trn2 and Trn3 only"
TORCH_NEURON_RELEASE = "Neuron SDK 2.33+, PyTorch 2.13/2.14, torch-neuronx 2.14+"
VLLM_IMAGE = "public.ecr.aws/neuron/pytorch-inference-vllm-neuronx"


def string_text(node: cst.CSTNode, needle: str) -> str | None:
    """The text of a one-token string literal that contains ``needle``, ``{}`` standing for each
    replacement field of an f-string; None for any other string, and for one with blanks (prose, a
    docstring), which names no image or instance type. Every string of a file comes here: the raw
    token is looked at before the literal is evaluated."""
    if isinstance(node, cst.SimpleString):
        if needle not in node.value:
            return None
        value = node.evaluated_value
        text = value if isinstance(value, str) else None
    elif isinstance(node, cst.FormattedString):
        parts = [p.value if isinstance(p, cst.FormattedStringText) else "{}" for p in node.parts]
        text = "".join(parts) if any(needle in p for p in parts) else None
    else:
        return None
    return text if text and not any(c.isspace() for c in text) else None
