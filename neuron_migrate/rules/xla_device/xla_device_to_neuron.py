"""NM101: XLA device -> torch.device("neuron")"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Edit, Example, Rule, RuleMeta, register
from neuron_migrate.rules.xla_device.common import (
    DOCS_CHANGES,
    DOCS_DISTRIBUTED,
    DOCS_OLD_VS_NATIVE,
    XLA_DEVICE_CALLS,
    _BIND_CORE,
    looks_distributed,
    neuron_device_code,
)


@register
class XlaDeviceToNeuron(Rule):
    """``xm.xla_device()`` / ``torch_xla.device()`` -> ``torch.device("neuron")``.

    The one official old-to-new snippet (``DOCS_OLD_VS_NATIVE``) shows exactly this replacement.
    A torchrun process sees every core of its host and starts on core 0; in a distributed file
    whose rewrite does not bind each rank to its core (where it joins the process group), the edit
    asks for the explicit ``torch.neuron.set_device(LOCAL_RANK)``.
    """

    meta = RuleMeta(
        "NM101",
        'XLA device -> torch.device("neuron")',
        safety=SAFE,
        summary="The XLA device handle becomes the native neuron device; `devkind=` is dropped.",
        docs=(DOCS_OLD_VS_NATIVE, DOCS_CHANGES, DOCS_DISTRIBUTED),
        example=Example(
            before=(
                "import torch\n"
                "import torch_xla.core.xla_model as xm\n\n"
                "device = xm.xla_device()\n"
                "model = model.to(device)\n"
            ),
            after=(
                "import torch\n\n"
                'device = torch.device("neuron")\n'
                "model = model.to(device)\n"
            ),
        ),
    )
    calls = {qname: "to_neuron_device" for qname in XLA_DEVICE_CALLS}

    def to_neuron_device(self, original: cst.Call, updated: cst.Call, qname: str):
        text = neuron_device_code(self.ctx, updated, qname)
        if text is None:
            self.ctx.manual(
                self.meta, original, 'arguments not understood; replace with torch.device("neuron", <index>)'
            )
            return updated
        return Edit(self.ctx.expr(text), review=_BIND_CORE if self._binding_left_to_user() else "")

    def _binding_left_to_user(self) -> bool:
        """A file run as one process per core whose rewrite does not put each rank on its own core."""
        if not looks_distributed(self.ctx):
            return False
        # The distributed rules import this family's helpers: their answer is read at call time.
        from neuron_migrate.rules.xla_distributed import binds_cores

        return not binds_cores(self.ctx)
