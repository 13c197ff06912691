"""NM112: xm.wait_device_ops() -> torch.neuron.synchronize()"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Example, Rule, RuleMeta, register
from neuron_migrate.rules.xla_step.common import DOCS_MODULE


@register
class WaitDeviceOps(Rule):
    meta = RuleMeta(
        "NM112",
        "xm.wait_device_ops() -> torch.neuron.synchronize()",
        safety=SAFE,
        summary="torch.neuron.synchronize() waits for all queued work on the device.",
        docs=(DOCS_MODULE,),
        example=Example(
            before=(
                "import time\n"
                "import torch_xla.core.xla_model as xm\n\n"
                "start = time.time()\n"
                "run_epoch()\n"
                "xm.wait_device_ops()\n"
                "print(time.time() - start)\n"
            ),
            after=(
                "import time\n"
                "import torch\n\n"
                "start = time.time()\n"
                "run_epoch()\n"
                "torch.neuron.synchronize()\n"
                "print(time.time() - start)\n"
            ),
        ),
    )
    calls = {"torch_xla.core.xla_model.wait_device_ops": "synchronize"}

    def synchronize(self, original: cst.Call, updated: cst.Call, qname: str):
        torch = self.ctx.require_import("torch")
        return self.ctx.expr(f"{torch}.neuron.synchronize()")
