"""Mixed precision: XLA autocast, sync-free optimizers and gradient scalers.

TorchNeuron supports ``torch.autocast(device_type="neuron")`` following the CUDA conventions; the
default autocast dtype for ``neuron`` is not documented, so the rewrite always states the dtype.
The sync-free optimizers existed only to avoid XLA graph breaks and become the stock ones.
"""

from __future__ import annotations

import re

import libcst as cst

from neuron_migrate.rules.base import MANUAL, SAFE, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import bind_args, keyword_arg, literal
from neuron_migrate.rules.tables.xla_amp import ROWS
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
# ``torch.cuda.amp.autocast`` has no device parameter: it is always "cuda".
_CUDA_AUTOCAST = ("enabled", "dtype", "cache_enabled")
CUDA_AUTOCAST_CALLS = frozenset({"torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast"})
AUTOCAST_PARAMS = {
    **dict.fromkeys(AUTOCAST_CALLS, _STOCK_AUTOCAST),
    **dict.fromkeys(CUDA_AUTOCAST_CALLS, _CUDA_AUTOCAST),
    "torch_xla.amp.autocast": _XLA_AUTOCAST,
    "torch_xla.amp.autocast_mode.autocast": _XLA_AUTOCAST,
}

_DTYPE_ADDED = "dtype made explicit as bfloat16 (the XLA autocast default); confirm it is the precision you want"
# XLA code asked for bf16 autocast with a "cuda" autocast, whose ops torch_xla lowered to the device;
# on TorchNeuron a "cuda" autocast covers no op of the neuron device, so it is silently off.
_CUDA_ON_XLA = '"cuda" autocast was the XLA-era way to autocast on the XLA device; it now targets "neuron"'
_CUDA_AND_XLA = (
    'this file runs on CUDA too: if this autocast ran on the XLA device, make it device_type="neuron" '
    '(a "cuda" autocast is off on the neuron device)'
)
_CUDA_DTYPE_ADDED = 'dtype made explicit as float16 (the "cuda" autocast default); bfloat16 is the usual choice on Neuron'
_BF16_CHECK_PATCH = 'XLA-era trick for a "cuda" bf16 autocast; not needed with device_type="neuron": delete it'
# Code that really runs on a GPU: then a "cuda" autocast may be meant for it.
_REAL_CUDA = re.compile(r"\.cuda\(|torch\.cuda\.is_available\(|[\"']cuda:\d|device\s*=\s*[\"']cuda[\"']")


@register
class AutocastToNeuron(Rule):
    """XLA autocast -> ``torch.autocast(device_type="neuron", dtype=...)`` (DOCS_CHANGES, mixed precision).
    XLA-era code also autocast with ``device_type="cuda"`` / ``torch.cuda.amp.autocast``, which torch_xla
    applied to the XLA device; on TorchNeuron such an autocast covers no neuron op and is silently off."""

    # Its TODO on a "cuda" autocast depends on the legacy imports the first run removes: a rerun keeps it.
    follow_up_todos = True

    meta = RuleMeta(
        "NM150",
        'XLA autocast -> torch.autocast(device_type="neuron")',
        safety=SAFE,
        risks=frozenset({"numerics"}),
        summary=(
            'Autocast targets the neuron device, always with an explicit dtype. A "cuda" autocast in XLA code (how '
            "bf16 autocast reached the XLA device) targets neuron too, unless the file also runs on a GPU."
        ),
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
    references = {"torch.cuda.is_bf16_supported": "bf16_check_patch"}

    def bf16_check_patch(self, original: cst.CSTNode, updated: cst.CSTNode, qname: str):
        """``torch.cuda.is_bf16_supported = lambda: True`` let a "cuda" bf16 autocast start on XLA."""
        line = self.ctx.statement_stack[-1] if self.ctx.statement_stack else None
        assign = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
        targets = [t.target for t in assign.targets] if isinstance(assign, cst.Assign) else []
        if self.ctx.has_legacy_imports and original in targets:
            self.ctx.manual(original, _BF16_CHECK_PATCH)
        return updated

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
        cuda = qname in CUDA_AUTOCAST_CALLS
        device_param = None if cuda else params[0]
        device = bound.get(device_param) if device_param else None
        notes = []
        if cuda or (device is not None and literal(device.value) == "cuda"):
            if not self.ctx.has_legacy_imports:
                return updated
            if _REAL_CUDA.search(self.ctx.text):
                self.ctx.manual(original, _CUDA_AND_XLA)
                return updated
            notes.append(_CUDA_ON_XLA)
            device = None
        elif not legacy and (device is None or not is_xla_string(device.value)):
            return updated
        torch = self.ctx.require_import("torch")

        neuron = cst.SimpleString('"neuron"')
        if device is not None and isinstance(device.value, cst.SimpleString):
            neuron = to_neuron_string(device.value)
        device_type = keyword_arg(device or cst.Arg(neuron), "device_type").with_changes(value=neuron)
        dtype = bound.get("dtype")
        if dtype is None:
            # The dtype the call ran with before: a "cuda" autocast defaulted to float16.
            default = "float16" if notes else "bfloat16"
            notes.append(_CUDA_DTYPE_ADDED if notes else _DTYPE_ADDED)
            dtype = cst.Arg(self.ctx.expr(f"{torch}.{default}"))
        if notes:
            self.ctx.review("; ".join(notes))
        rest = [keyword_arg(arg, name) for name, arg in bound.items() if name not in (device_param, "dtype")]
        args = _respaced([device_type, keyword_arg(dtype, "dtype"), *rest], updated.args)
        func = self.ctx.expr(f"{torch}.autocast") if legacy or cuda else updated.func
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
    rows = ROWS


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
        ctx.facts["uses_torch_xla"] = "torch_xla" in ctx.text
    return bool(ctx.facts["uses_torch_xla"])
