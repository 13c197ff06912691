"""NM408: torch_neuronx.nki_jit -> @nki.jit + torch_neuronx.nki_op"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.neuronx_trace.common import DOCS_NATIVE_FAQ, TRIGGERS
from neuron_migrate.rules.tables.neuronx_trace import NKI, ROWS


@register
class NkiJitToNkiOp(Rule):
    """``torch_neuronx.nki_jit`` (removed in 2.24) -> an ``@nki.jit`` kernel registered with
    ``@torch_neuronx.nki_op`` (DOCS_NATIVE_FAQ)."""

    meta = RuleMeta(
        "NM408",
        "torch_neuronx.nki_jit -> @nki.jit + torch_neuronx.nki_op",
        safety=MANUAL,
        risks=frozenset({"numerics"}),
        summary="NKI kernels are registered as PyTorch ops with torch_neuronx.nki_op; they run eager and compiled.",
        docs=(DOCS_NATIVE_FAQ,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from torch_neuronx import nki_jit\n\n"
                "add_kernel = nki_jit(add_kernel_impl)\n"
            ),
            after=(
                "from torch_neuronx import nki_jit\n\n"
                f"# TODO(neuron-migrate NM408): {NKI}\n"
                "add_kernel = nki_jit(add_kernel_impl)\n"
            ),
        ),
    )
    rows = ROWS
