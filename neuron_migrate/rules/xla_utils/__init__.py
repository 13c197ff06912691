"""Pure-Python helpers that scripts import from torch_xla: synthetic data, rate tracking, log lines,
copying a checkpoint's tensors to the CPU, the version number.

``torch_xla.utils.utils.SampleGenerator``, ``xm.RateTracker`` and the ``torch_xla.test.test_utils``
printing and TensorBoard helpers hold no XLA code, yet importing them needs torch_xla. Each becomes
a few lines of stock Python: an expression where one does the job, else a small local definition
added once after the file's imports, written to print the same log lines as the original (scripts
and dashboards parse them).
"""

from __future__ import annotations

from neuron_migrate.rules.xla_utils.convert_to_cpu_to_tree_map import ConvertToCpuToTreeMap
from neuron_migrate.rules.xla_utils.rate_tracker_to_local_class import RateTrackerToLocalClass
from neuron_migrate.rules.xla_utils.sample_generator_to_list import SampleGeneratorToList
from neuron_migrate.rules.xla_utils.send_to_device_to_tree_map import SendToDeviceToTreeMap
from neuron_migrate.rules.xla_utils.test_utils_to_local_helpers import TestUtilsToLocalHelpers
from neuron_migrate.rules.xla_utils.xla_checkpoint_to_torch import XlaCheckpointToTorch
from neuron_migrate.rules.xla_utils.version_to_torch_version import VersionToTorchVersion
from neuron_migrate.rules.xla_utils.xla_sync_batch_norm_to_torch import XlaSyncBatchNormToTorch

__all__ = [
    "ConvertToCpuToTreeMap",
    "RateTrackerToLocalClass",
    "SampleGeneratorToList",
    "SendToDeviceToTreeMap",
    "TestUtilsToLocalHelpers",
    "VersionToTorchVersion",
    "XlaCheckpointToTorch",
    "XlaSyncBatchNormToTorch",
]
