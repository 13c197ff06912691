"""NM150: XLA autocast -> torch.autocast(device_type="neuron")"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Edit, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import bind_args, keyword_arg, literal
from neuron_migrate.rules.xla_amp.common import (
    AUTOCAST_PARAMS,
    CUDA_AUTOCAST_CALLS,
    DOCS_BF16,
    DOCS_CHANGES,
    _BF16_CHECK_PATCH,
    _CUDA_AND_XLA,
    _CUDA_DTYPE_ADDED,
    _CUDA_ON_XLA,
    _DTYPE_ADDED,
    _REAL_CUDA,
    _respaced,
)
from neuron_migrate.rules.xla_device.common import is_xla_string, to_neuron_string


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
            self.ctx.manual(self.meta, original, _BF16_CHECK_PATCH)
        return updated

    def to_neuron_autocast(self, original: cst.Call, updated: cst.Call, qname: str):
        params = AUTOCAST_PARAMS[qname]
        legacy = qname.startswith("torch_xla")
        bound = bind_args(updated, params)
        if bound is None:
            if legacy:
                self.ctx.manual(
                    self.meta,
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
                self.ctx.manual(self.meta, original, _CUDA_AND_XLA)
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
        rest = [keyword_arg(arg, name) for name, arg in bound.items() if name not in (device_param, "dtype")]
        args = _respaced([device_type, keyword_arg(dtype, "dtype"), *rest], updated.args)
        func = self.ctx.expr(f"{torch}.autocast") if legacy or cuda else updated.func
        return Edit(updated.with_changes(func=func, args=args), review="; ".join(notes))
