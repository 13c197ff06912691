"""``neuron-migrate verify``: run the legacy program and its rewrite on the same inputs, step by step.

Both sides run under the same recorder (``site/sitecustomize.py``, put on their path; the user's code is not
touched): the loss at each ``backward()``, the gradients and parameters around each ``optimizer.step()``, the
batches, and the outermost model outputs. ``verify()`` compares them and explains where they first part.
Importing this package does not import torch; the sides run in their own processes.
"""

from __future__ import annotations

from neuron_migrate.verify.runner import VerifyError, verify
from neuron_migrate.verify.sides import Options

__all__ = ["Options", "VerifyError", "verify"]
