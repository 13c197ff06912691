"""Pure-Python helpers that scripts import from torch_xla: synthetic data, rate tracking, log lines,
copying a checkpoint's tensors to the CPU, the version number.

``torch_xla.utils.utils.SampleGenerator``, ``xm.RateTracker`` and the ``torch_xla.test.test_utils``
printing and TensorBoard helpers hold no XLA code, yet importing them needs torch_xla. Each becomes
a few lines of stock Python: an expression where one does the job, else a small local definition
added once after the file's imports, written to print the same log lines as the original (scripts
and dashboards parse them).
"""

from __future__ import annotations
