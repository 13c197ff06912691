"""NM141: pl.ParallelLoader(...).per_device_loader(device) -> loader, batches moved in the loop"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import REVIEW, Edit, Example, RuleMeta, register
from neuron_migrate.rules.calls import bind_args
from neuron_migrate.rules.xla_data.common import (
    DOCS_WHAT_CHANGES,
    FOUND_MESSAGE,
    NOT_FOUND_MESSAGE,
    NO_OP_NOTE,
    PARALLEL_LOADER,
    PARALLEL_LOADER_PARAMS,
    REMOVED_MESSAGE,
    _DeviceLoaderRule,
    _self_assignment,
    file_index,
)
from neuron_migrate.rules.xla_step.common import DOCS_EAGER


@register
class ParallelLoaderRemoval(_DeviceLoaderRule):
    """``pl.ParallelLoader(loader, [device]).per_device_loader(device)`` -> ``loader``, as NM140."""

    meta = RuleMeta(
        "NM141",
        "pl.ParallelLoader(...).per_device_loader(device) -> loader, batches moved in the loop",
        safety=REVIEW,
        risks=frozenset({"performance"}),
        summary=(
            "The plain DataLoader is iterated and each loop moves its batch with .to(device), as for "
            "MpDeviceLoader (NM140)."
        ),
        docs=(DOCS_WHAT_CHANGES, DOCS_EAGER),
        example=Example(
            before=(
                "import torch_xla.distributed.parallel_loader as pl\n\n\n"
                "def evaluate(model, loader, device):\n"
                "    for batch in pl.ParallelLoader(loader, [device]).per_device_loader(device):\n"
                "        model(**batch)\n"
            ),
            after=(
                "def evaluate(model, loader, device):\n"
                "    # neuron-migrate(NM141): batch moved to the device here, as ParallelLoader did; check tensors "
                "nested deeper in the batch are moved too\n"
                "    for batch in loader:\n"
                "        batch = {k: v.to(device) for k, v in batch.items()}\n"
                "        model(**batch)\n"
            ),
        ),
    )
    calls = {PARALLEL_LOADER: "parallel_loader"}
    LOADER = "ParallelLoader"

    def parallel_loader(self, original: cst.Call, updated: cst.Call, qname: str):
        index = file_index(self.ctx)
        if index is not None and id(original) in index.inline_parallel:
            return updated  # rewritten with the .per_device_loader() call around it
        args = bind_args(updated, PARALLEL_LOADER_PARAMS, other_keywords=True)
        sites = index.parallel_ok.get(id(original)) if index else None
        if sites is None or args is None or "loader" not in args:
            self.ctx.manual(
                self.meta,
                original,
                "iterate the DataLoader itself and move each batch with `.to(device)` in the loop",
            )
            return updated
        loops = [index.loops[id(loop)] for site in sites for loop in site.loops]
        if not loops:
            message = NOT_FOUND_MESSAGE
        else:
            message = FOUND_MESSAGE if all(plan.clear for plan in loops) else REMOVED_MESSAGE
        name = f"`{sites[0].name}`" if sites[0].name else "its per-device loader"
        message = message.format(loader=self.LOADER, name=name, device="device")
        target = self.scan_target(original)
        if target and target == code_of(args["loader"].value):
            message += NO_OP_NOTE
        return Edit(args["loader"].value, review=message)

    def scan_target(self, call: cst.Call) -> str:
        index = file_index(self.ctx)
        target = index.scan.target_of.get(id(call)) if index else None
        return code_of(target) if target is not None else ""

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        func = updated.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "per_device_loader":
            return updated
        index = file_index(self.ctx)
        site = index.sites.get(id(original)) if index else None
        if site is None or site.rule != self.meta.id:
            return updated
        plain = func.value
        if isinstance(plain, cst.Call):
            args = bind_args(plain, PARALLEL_LOADER_PARAMS, other_keywords=True)
            if args is None or "loader" not in args:
                return updated
            plain = args["loader"].value
        site.device_code = code_of(updated.args[0].value) if updated.args else ""
        return Edit(plain, review=self._site_message(site, site.device_code) + _self_assignment(site, plain))
