"""Mixed precision: XLA autocast, sync-free optimizers and gradient scalers.

TorchNeuron supports ``torch.autocast(device_type="neuron")`` following the CUDA conventions; the
default autocast dtype for ``neuron`` is not documented, so the rewrite always states the dtype.
The sync-free optimizers existed only to avoid XLA graph breaks and become the stock ones.
"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import MANUAL, SAFE, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import bind_args, keyword_arg
from neuron_migrate.rules.xla_device import AUTOCAST_CALLS, is_xla_string, to_neuron_string

DOCS_CHANGES = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html"
DOCS_BF16 = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/appnotes/torch-neuronx/"
    "migration-from-xla-downcast-bf16.html"
)

# Parameter order of each autocast entry point; the legacy one takes the device first and
# ``enabled`` before ``dtype``.
_STOCK_AUTOCAST = ("device_type", "dtype", "enabled", "cache_enabled")
_XLA_AUTOCAST = ("device", "enabled", "dtype", "cache_enabled")
AUTOCAST_PARAMS = {
    **dict.fromkeys(AUTOCAST_CALLS, _STOCK_AUTOCAST),
    "torch_xla.amp.autocast": _XLA_AUTOCAST,
    "torch_xla.amp.autocast_mode.autocast": _XLA_AUTOCAST,
}

_DTYPE_ADDED = "dtype made explicit as bfloat16 (the XLA autocast default); confirm it is the precision you want"


@register
class AutocastToNeuron(Rule):
    """XLA autocast -> ``torch.autocast(device_type="neuron", dtype=...)`` (DOCS_CHANGES, mixed precision)."""

    meta = RuleMeta(
        "NM150",
        'XLA autocast -> torch.autocast(device_type="neuron")',
        safety=SAFE,
        risks=frozenset({"numerics"}),
        summary="Autocast targets the neuron device, always with an explicit dtype.",
        docs=(DOCS_CHANGES, DOCS_BF16),
        triggers=(b"xla",),
        example=Example(
            before=(
                "import torch\n\n"
                'with torch.autocast("xla"):\n'
                "    loss = model(batch)\n"
            ),
            after=(
                "import torch\n\n"
                f"# neuron-migrate(NM150): {_DTYPE_ADDED}\n"
                'with torch.autocast(device_type="neuron", dtype=torch.bfloat16):\n'
                "    loss = model(batch)\n"
            ),
        ),
    )
    calls = {qname: "to_neuron_autocast" for qname in AUTOCAST_PARAMS}

    def to_neuron_autocast(self, original: cst.Call, updated: cst.Call, qname: str):
        params = AUTOCAST_PARAMS[qname]
        legacy = qname.startswith("torch_xla")
        bound = bind_args(updated, params)
        if bound is None:
            if legacy:
                self.ctx.manual(
                    original,
                    'arguments not understood; write torch.autocast(device_type="neuron", dtype=torch.bfloat16)',
                )
            return updated
        device = bound.get(params[0])
        if not legacy and (device is None or not is_xla_string(device.value)):
            return updated
        torch = self.ctx.require_import("torch")

        neuron = cst.SimpleString('"neuron"')
        if device is not None and isinstance(device.value, cst.SimpleString):
            neuron = to_neuron_string(device.value)
        device_type = keyword_arg(device or cst.Arg(neuron), "device_type").with_changes(value=neuron)
        dtype = bound.get("dtype")
        if dtype is None:
            self.ctx.review(_DTYPE_ADDED)
            dtype = cst.Arg(self.ctx.expr(f"{torch}.bfloat16"))
        rest = [keyword_arg(arg, name) for name, arg in bound.items() if name not in (params[0], "dtype")]
        args = _respaced([device_type, keyword_arg(dtype, "dtype"), *rest], updated.args)
        func = self.ctx.expr(f"{torch}.autocast") if legacy else updated.func
        return updated.with_changes(func=func, args=args)


def _respaced(new_args: list[cst.Arg], old_args) -> list[cst.Arg]:
    """Give the reordered arguments the separators of the positions they now hold, so
    one-line calls stay one-line and a multi-line call keeps one argument per line."""
    old = list(old_args)
    separators = [(a.comma, a.whitespace_after_arg) for a in old]
    if separators:
        inner, last = separators[:-1], separators[-1]
    else:
        inner, last = [], (cst.MaybeSentinel.DEFAULT, cst.SimpleWhitespace(""))
    spare = inner[0] if inner else (cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")), cst.SimpleWhitespace(""))
    out = []
    for i, arg in enumerate(new_args):
        if i == len(new_args) - 1:
            comma, after = last
        else:
            comma, after = inner[i] if i < len(inner) else spare
        out.append(arg.with_changes(comma=comma, whitespace_after_arg=after))
    return out


SYNCFREE = {
    f"torch_xla.amp.syncfree.{module}{name}": name
    for name, home in (("Adam", "adam"), ("AdamW", "adamw"), ("SGD", "sgd"))
    for module in ("", f"{home}.")
}


@register
class SyncfreeOptimizers(Rule):
    """``torch_xla.amp.syncfree.{Adam,AdamW,SGD}`` -> ``torch.optim`` (same arguments and updates)."""

    meta = RuleMeta(
        "NM151",
        "syncfree optimizers -> torch.optim",
        safety=SAFE,
        risks=frozenset({"numerics"}),
        summary="The sync-free variants only avoided XLA graph breaks; the stock optimizers do the same math.",
        docs=(DOCS_CHANGES,),
        example=Example(
            before=(
                "import torch\n"
                "from torch_xla.amp import syncfree\n\n"
                "optimizer = syncfree.AdamW(model.parameters(), lr=1e-4)\n"
            ),
            after=(
                "import torch\n\n"
                "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)\n"
            ),
        ),
    )
    calls = {qname: "to_stock_call" for qname in SYNCFREE}
    references = {qname: "to_stock_name" for qname in SYNCFREE}

    def _stock(self, qname: str) -> cst.BaseExpression:
        return self.ctx.expr(f"{self.ctx.require_import('torch.optim')}.{SYNCFREE[qname]}")

    def to_stock_call(self, original: cst.Call, updated: cst.Call, qname: str):
        return updated.with_changes(func=self._stock(qname))

    def to_stock_name(self, original, updated, qname: str):
        return self._stock(qname)


GRAD_SCALERS = (
    "torch_xla.amp.GradScaler",
    "torch_xla.amp.grad_scaler.GradScaler",
    "torch.cuda.amp.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler",
    "torch.amp.GradScaler",
    "torch.amp.grad_scaler.GradScaler",
)


@register
class GradScalerWithXla(Rule):
    """Loss scaling in XLA code: not rewritten (DOCS_BF16: bf16 is the documented precision)."""

    meta = RuleMeta(
        "NM152",
        "GradScaler in XLA code needs a decision",
        safety=MANUAL,
        risks=frozenset({"numerics"}),
        summary="bf16 needs no loss scaling; whether fp16 loss scaling works on neuron is unverified.",
        docs=(DOCS_BF16, DOCS_CHANGES),
        example=Example(
            before=(
                "import torch_xla.amp\n\n"
                "scaler = torch_xla.amp.GradScaler()\n"
            ),
            after=(
                "import torch_xla.amp\n\n"
                "# TODO(neuron-migrate NM152): bf16 needs no loss scaling: delete the scaler and call "
                "loss.backward() and optimizer.step() directly (fp16 scaling on neuron is unverified)\n"
                "scaler = torch_xla.amp.GradScaler()\n"
            ),
        ),
    )
    calls = {qname: "flag_scaler" for qname in GRAD_SCALERS}

    def flag_scaler(self, original: cst.Call, updated: cst.Call, qname: str):
        if qname.startswith("torch.") and not _uses_torch_xla(self.ctx):
            return updated
        self.ctx.manual(
            original,
            "bf16 needs no loss scaling: delete the scaler and call loss.backward() and optimizer.step() "
            "directly (fp16 scaling on neuron is unverified)",
        )
        return updated


def _uses_torch_xla(ctx) -> bool:
    if "uses_torch_xla" not in ctx.facts:
        ctx.facts["uses_torch_xla"] = "torch_xla" in ctx.module.code
    return bool(ctx.facts["uses_torch_xla"])
