"""NM104: runtime device queries -> torch.neuron"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Edit, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import bind_args
from neuron_migrate.rules.tables.xla_device import ROWS
from neuron_migrate.rules.xla_device.common import (
    DOCS_DISTRIBUTED,
    DOCS_MODULE,
    TRAINIUM_DEVICE_TYPE,
    _DEVICE_COUNT_REVIEW,
    block_statements,
    device_type_check,
    is_device_type_query,
    is_none,
    known_condition,
)


def _folded_to(value: bool) -> str:
    return f"device-type check folded to {value}, its value on Trainium"


@register
class RuntimeDeviceQueries(Rule):
    """``torch_xla.runtime`` device queries -> ``torch.neuron`` (DOCS_MODULE) or the torchrun env.

    A check of the device type against a literal is known on TorchNeuron: it is folded to what it
    was on Trainium, and an ``if`` on it keeps only the branch Trainium took.
    """

    meta = RuleMeta(
        "NM104",
        "runtime device queries -> torch.neuron",
        safety=SAFE,
        summary=(
            "Device count and bf16 queries of torch_xla.runtime map onto torch.neuron; the device type is "
            'what Trainium reported ("NEURON"), and a check of it keeps the branch Trainium took.'
        ),
        docs=(DOCS_MODULE, DOCS_DISTRIBUTED),
        example=Example(
            before=(
                "import torch_xla.runtime as xr\n\n"
                "xr.set_device_type(\"NEURON\")\n"
                "kind = xr.device_type()\n"
                "cores = xr.local_device_count()\n"
                'if xr.device_type() == "NEURON":\n'
                "    batch_size = 4\n"
                "else:\n"
                "    batch_size = 16\n"
            ),
            after=(
                "import torch\n\n"
                'kind = "NEURON"\n'
                f"# neuron-migrate(NM104): {_DEVICE_COUNT_REVIEW}\n"
                "cores = torch.neuron.device_count()\n"
                "# neuron-migrate(NM104): xr.device_type() was \"NEURON\" on Trainium, so this check is always True "
                "on TorchNeuron: only its branch is kept\n"
                "batch_size = 4\n"
            ),
        ),
    )
    rows = ROWS
    calls = {
        "torch_xla.runtime.device_type": "device_type",
        "torch_xla.runtime.local_device_count": "local_count",
        "torch_xla.runtime.addressable_device_count": "local_count",
        "torch_xla.device_count": "local_count",
        "torch_xla.torch_xla.device_count": "local_count",
        "torch_xla.runtime.global_runtime_device_count": "global_count",
        "torch_xla.runtime.global_device_count": "global_count",
        "torch_xla.core.xla_model.get_xla_supported_devices": "supported_devices",
        "torch_xla.runtime.is_bf16_supported": "bf16_supported",
        "torch_xla.core.xla_model.xla_device_hw": "device_hw",
    }

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # id(comparison) -> (query, value on Trainium); the queries inside are left to the fold
        self.checks: dict[int, tuple[cst.Call, bool]] = {}
        self.folded_queries: set[int] = set()
        self.if_tests: set[int] = set()
        self.elifs: set[int] = set()
        # id(``check and x`` / ``check or x``) -> (query, value of the check, value of the whole or None)
        self.conditions: dict[int, tuple[cst.Call, bool, bool | None]] = {}

    def visit_Comparison(self, node: cst.Comparison) -> None:
        check = device_type_check(self.ctx, node)
        if check is not None:
            self.checks[id(node)] = check
            self.folded_queries.add(id(check[0]))

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        check = known_condition(self.ctx, node.left)
        if check is None:
            return
        query, value = check
        whole = known_condition(self.ctx, node)
        self.conditions[id(node)] = (query, value, None if whole is None else whole[1])
        self.if_tests.add(id(node.left))  # folded with its condition, in one edit
        if whole is not None:
            self.checks[id(node)] = whole

    def leave_BooleanOperation(self, original: cst.BooleanOperation, updated: cst.BooleanOperation):
        condition = self.conditions.get(id(original))
        if condition is None:
            return updated
        query, value, whole = condition
        if whole is not None and id(original) in self.if_tests:
            return updated  # the ``if`` keeps the branch it decides
        folded = cst.Name(str(whole)) if whole is not None else updated.right
        return Edit(folded, message=_folded_to(value), review=self._fold_message(query, value))

    def visit_If(self, node: cst.If) -> None:
        self.if_tests.add(id(node.test))
        if isinstance(node.orelse, cst.If):
            self.elifs.add(id(node.orelse))

    def _fold_message(self, query: cst.Call, value: bool) -> str:
        return (
            f'{self.ctx.code(query.func)}() was "{TRAINIUM_DEVICE_TYPE}" on Trainium, '
            f"so this check is always {value} on TorchNeuron"
        )

    def leave_Comparison(self, original: cst.Comparison, updated: cst.Comparison):
        check = self.checks.get(id(original))
        if check is None or id(original) in self.if_tests:
            return updated
        return Edit(cst.Name(str(check[1])), message=_folded_to(check[1]), review=self._fold_message(*check))

    def leave_If(self, original: cst.If, updated: cst.If):
        check = self.checks.get(id(original.test))
        if check is None:
            return updated
        value = check[1]
        message = self._fold_message(*check)
        kept = None if id(original) in self.elifs else self._taken_branch(original, updated)
        if kept is None:
            review = message + ("" if value else ": delete the block")
            return Edit(updated.with_changes(test=cst.Name(str(value))), message=_folded_to(value), review=review)
        review = message + (": only its branch is kept" if value else ": only the other branch is kept")
        first = kept[0]
        kept[0] = first.with_changes(leading_lines=[*original.leading_lines, *first.leading_lines])
        return Edit(cst.FlattenSentinel(kept), message=_folded_to(value), review=review)

    def _taken_branch(self, original: cst.If, updated: cst.If) -> list[cst.BaseStatement] | None:
        """The statements Trainium ran, or None when that leaves nothing to stand in the ``if``'s place.
        An ``elif`` that becomes the ``if`` is simplified the same way when its check is known too."""
        check = self.checks.get(id(original.test))
        if check is None:
            return [updated]
        if check[1]:
            return block_statements(updated.body)
        if isinstance(updated.orelse, cst.Else):
            return block_statements(updated.orelse.body)
        if isinstance(updated.orelse, cst.If):
            return self._taken_branch(original.orelse, updated.orelse) or [updated.orelse]
        return None

    def device_type(self, original, updated, qname):
        if id(original) in self.folded_queries:
            return updated
        return Edit(
            self.ctx.expr(f'"{TRAINIUM_DEVICE_TYPE}"'),
            message=f'xr.device_type() -> "{TRAINIUM_DEVICE_TYPE}", what it returned on Trainium',
        )

    def local_count(self, original, updated, qname):
        return Edit(
            self.ctx.expr(f"{self.ctx.require_import('torch')}.neuron.device_count()"),
            message="local device count -> torch.neuron.device_count()",
            review=_DEVICE_COUNT_REVIEW,
        )

    def global_count(self, original, updated, qname):
        os_name = self.ctx.require_import("os")
        return Edit(
            self.ctx.expr(f'int({os_name}.environ.get("WORLD_SIZE", "1"))'),
            message="global device count -> WORLD_SIZE",
            review="WORLD_SIZE counts torchrun processes (one per NeuronCore) and is 1 outside torchrun",
        )

    def supported_devices(self, original, updated, qname):
        bound = bind_args(updated, ("devkind", "max_devices"))
        if bound is None or not is_none(bound.get("max_devices")):
            self.ctx.manual(
                self.meta,
                original,
                'list the devices yourself: [f"neuron:{i}" for i in range(torch.neuron.device_count())]',
            )
            return updated
        torch = self.ctx.require_import("torch")
        return Edit(
            self.ctx.expr(f'[f"neuron:{{i}}" for i in range({torch}.neuron.device_count())]'),
            review='device names are now "neuron:<i>"; check code that parses them',
        )

    def bf16_supported(self, original, updated, qname):
        return Edit(
            self.ctx.expr(f"{self.ctx.require_import('torch')}.neuron.is_bf16_supported()"),
            review="torch.neuron.is_bf16_supported() is inferred, not documented; confirm your torch-neuronx has it",
        )

    def device_hw(self, original, updated, qname):
        if id(original) in self.folded_queries:
            return updated
        if not is_device_type_query(self.ctx, original):
            self.ctx.manual(
                self.meta, original, f'arguments not understood; on Trainium this was "{TRAINIUM_DEVICE_TYPE}"'
            )
            return updated
        return Edit(
            self.ctx.expr(f'"{TRAINIUM_DEVICE_TYPE}"'),
            message=f'xm.xla_device_hw() -> "{TRAINIUM_DEVICE_TYPE}", what it returned on Trainium',
            review=(
                f'"{TRAINIUM_DEVICE_TYPE}" is what Trainium reported; the tensor device type is now "neuron" '
                "(dev.type), if that is what the code needs"
            ),
        )
