"""NM140: pl.MpDeviceLoader(loader, device) -> loader, batches moved in the loop"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import REVIEW, Edit, Example, RuleMeta, register
from neuron_migrate.rules.calls import bind_args
from neuron_migrate.rules.xla_data.common import (
    DOCS_WHAT_CHANGES,
    MP_DEVICE_LOADER,
    _DeviceLoaderRule,
    _self_assignment,
    file_index,
)
from neuron_migrate.rules.xla_step.common import DOCS_EAGER

# SPMD split each batch of the one process over the devices; a torchrun rank gets the whole batch.
INPUT_SHARDING = (
    "; its input_sharding is gone: every torchrun rank now computes on the whole batch, so for data "
    "parallelism give each rank its slice (DistributedSampler, or the SPMD batch size divided by WORLD_SIZE) "
    "and wrap the model in DDP"
)


@register
class MpDeviceLoaderRemoval(_DeviceLoaderRule):
    """``pl.MpDeviceLoader(loader, device)`` -> ``loader``; each loop over it moves its batch with
    ``.to(device)`` (TorchNeuron is used like any PyTorch device, Neuron "What changes
    are needed?")."""

    meta = RuleMeta(
        "NM140",
        "pl.MpDeviceLoader(loader, device) -> loader, batches moved in the loop",
        safety=REVIEW,
        risks=frozenset({"performance"}),
        summary=(
            "The plain DataLoader is iterated and each loop moves its batch with .to(device). MpDeviceLoader "
            "also moved tensors nested anywhere in the batch and prefetched on background threads."
        ),
        docs=(DOCS_WHAT_CHANGES, DOCS_EAGER),
        example=Example(
            before=(
                "import torch_xla.distributed.parallel_loader as pl\n\n\n"
                "def train(model, loader, device):\n"
                "    device_loader = pl.MpDeviceLoader(loader, device)\n"
                "    for inputs, labels in device_loader:\n"
                "        loss = model(inputs, labels)\n"
            ),
            after=(
                "def train(model, loader, device):\n"
                "    # neuron-migrate(NM140): MpDeviceLoader removed: the loops over it move each batch to the "
                "device, without background prefetch\n"
                "    device_loader = loader\n"
                "    # neuron-migrate(NM140): batch moved to the device here, as MpDeviceLoader did; check tensors "
                "nested deeper in the batch are moved too\n"
                "    for inputs, labels in device_loader:\n"
                "        inputs, labels = inputs.to(device), labels.to(device)\n"
                "        loss = model(inputs, labels)\n"
            ),
        ),
    )
    follow_up_todos = True
    calls = {MP_DEVICE_LOADER: "plain_loader"}
    LOADER = "MpDeviceLoader"

    def plain_loader(self, original: cst.Call, updated: cst.Call, qname: str):
        args = bind_args(updated, ("loader", "device"), other_keywords=True)
        if args is None or "loader" not in args:
            self.ctx.manual(self.meta, original, "iterate the DataLoader itself and move each batch with `.to(device)`")
            return updated
        index = file_index(self.ctx)
        site = index.sites.get(id(original)) if index else None
        device = code_of(args["device"].value) if "device" in args else ""
        if site is not None:
            site.device_code = device
        message = self._site_message(site, device) + _self_assignment(site, args["loader"].value)
        if any(arg.keyword is not None and arg.keyword.value == "input_sharding" for arg in updated.args):
            message += INPUT_SHARDING
        return Edit(args["loader"].value, review=message)
