"""Dockerfiles: what the shell rules cannot see (rules NM520, NM521).

Shell-form ``RUN``, ``RUN <<EOF`` scripts and ``ENV`` instructions go through the shell rules (see
``migrate/dockerfile.py``). The rest of a Dockerfile is not shell, and nothing in it is rewritten:
a base image of the XLA era (a Neuron Deep Learning Container with PyTorch before 2.13, or an
optimum-neuron image) gets a TODO naming the TorchNeuron release to move to, and any other
instruction that names a legacy variable, command or package (``CMD ["neuron_parallel_compile",
...]``, ``ARG XLA_USE_BF16=1``) gets a TODO, so nothing is left silently.
"""

from __future__ import annotations

from neuron_migrate.rules.dockerfiles.common import legacy_image
from neuron_migrate.rules.dockerfiles.dispatch import apply_dockerfile_rules
from neuron_migrate.rules.dockerfiles.xla_era_base_image import _check_image

__all__ = [
    "_check_image",
    "apply_dockerfile_rules",
    "legacy_image",
]
