"""CUDA code -> the accelerator the script runs on (``rewrite --from cuda``).

Where PyTorch has a device-agnostic API the rewrite uses it (``torch.accelerator``, the accelerator's own
device type and process-group backend), so the migrated script runs on the neuron device and still runs on
the GPU it was written for. These rules have ``source = "cuda"``: they run only when a run asks for them.
"""

from __future__ import annotations
