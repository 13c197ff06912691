"""What the xla_amp rules share: helpers, constants and base classes."""

from __future__ import annotations

import re

import libcst as cst

from neuron_migrate.rules.base import Fact
from neuron_migrate.rules.xla_device.common import AUTOCAST_CALLS

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


GRAD_SCALERS = (
    "torch_xla.amp.GradScaler",
    "torch_xla.amp.grad_scaler.GradScaler",
    "torch.cuda.amp.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler",
    "torch.amp.GradScaler",
    "torch.amp.grad_scaler.GradScaler",
)


USES_TORCH_XLA = Fact("uses_torch_xla", lambda ctx: "torch_xla" in ctx.text)


def _uses_torch_xla(ctx) -> bool:
    return ctx.fact(USES_TORCH_XLA)
