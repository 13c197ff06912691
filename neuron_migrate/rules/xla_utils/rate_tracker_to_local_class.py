"""NM171: xm.RateTracker -> a local RateTracker class"""

from __future__ import annotations

from neuron_migrate.rules.base import SAFE, Example, RuleMeta, register
from neuron_migrate.rules.xla_utils.common import HELPERS, RATE_TRACKER, HelperRule


@register
class RateTrackerToLocalClass(HelperRule):
    """``xm.RateTracker`` -> a small local class with the same ``add`` / ``rate`` / ``global_rate``
    (DOCS_XLA_UTILS; torch_xla.core.xla_model)."""

    meta = RuleMeta(
        "NM171",
        "xm.RateTracker -> a local RateTracker class",
        safety=SAFE,
        summary="The examples-per-second tracker becomes a local class with the same methods and smoothing.",
        docs=("https://github.com/pytorch/xla/blob/master/torch_xla/core/xla_model.py",),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "tracker = xm.RateTracker()\n"
                "tracker.add(32)\n"
                'print(f"{tracker.rate():.1f} samples/s")\n'
            ),
            after=(
                "import os\nimport time\n\n\n"
                "# Stands in for torch_xla's xm.RateTracker.\n"
                + HELPERS["RateTracker"].code.replace("$os", "os").replace("$time", "time")
                + "\n\ntracker = RateTracker()\n"
                "tracker.add(32)\n"
                'print(f"{tracker.rate():.1f} samples/s")\n'
            ),
        ),
    )
    calls = {RATE_TRACKER: "to_local_class"}
    references = {RATE_TRACKER: "to_local_class"}

    def to_local_class(self, original, updated, qname: str):
        return self.use_helper(original, updated, "RateTracker", "torch_xla.core.xla_model")
