"""Launch scripts, notebooks' shell lines and Dockerfiles of CUDA projects -> the neuron device
(``rewrite --from cuda``).

The shell side of the CUDA rules: how many processes torchrun starts, which devices a process sees, the
launcher flags and environment variables that only mean something on NVIDIA GPUs, and the CUDA base images
of Dockerfiles. Like the Python CUDA rules, they have ``source = "cuda"`` and run only when a run asks.
"""

from __future__ import annotations
