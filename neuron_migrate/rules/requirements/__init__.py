"""Dependencies of the legacy Neuron stack -> the TorchNeuron stack (rules NM530-NM538).

The knowledge is one table, :data:`PACKAGES` (package -> what becomes of a requirement on it), and
:data:`OPTIMUM_EXTRAS` (which stock libraries stand in for each optimum-neuron extra). The file
formats (requirements files, pyproject.toml, setup.cfg, environment.yml) live in
``migrate/requirements.py``; they turn every dependency into a :class:`Requirement` and ask
:func:`plan_change` what to do with it. Shell scripts can ask the same for the arguments of a
``pip install`` through :func:`migrate_requirement`.

Why these targets: TorchNeuron is torch-neuronx 2.14 and later on PyTorch 2.13 / 2.14 (the Neuron
best-practices and quickstart pages); earlier torch-neuronx releases are the PyTorch/XLA library.
optimum-neuron pins that XLA stack (its 0.4.5 wheel requires torch-neuronx==2.8.0.2.10.16998,
transformers~=4.57, accelerate==1.8.1), so it cannot be installed next to TorchNeuron, whose Hugging
Face path is stock Transformers 5 / TRL / PEFT / Accelerate 1.13+ / Diffusers.
"""

from __future__ import annotations

from neuron_migrate.rules.requirements.common import (
    CUDA_BUILD_REVIEW,
    CUDA_INDEX_RULE,
    INDEX_MARKER,
    PACKAGE_PREFIXES,
    PACKAGES,
    Change,
    Requirement,
    Stack,
    capped_below,
    conda_requirement,
    cuda_index,
    is_neuron_index,
    migrate_requirement,
    parse_requirement,
    plan_change,
    poetry_requirement,
)

__all__ = [
    "CUDA_BUILD_REVIEW",
    "CUDA_INDEX_RULE",
    "Change",
    "INDEX_MARKER",
    "PACKAGE_PREFIXES",
    "PACKAGES",
    "Requirement",
    "Stack",
    "capped_below",
    "conda_requirement",
    "cuda_index",
    "is_neuron_index",
    "migrate_requirement",
    "parse_requirement",
    "plan_change",
    "poetry_requirement",
]
