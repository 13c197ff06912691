"""NM402: saved traced Neuron model (torch.jit.save / torch.jit.load)"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import first_argument
from neuron_migrate.rules.neuronx_trace.common import (
    DOCS_COMPILE,
    DOCS_ENV,
    RECOMPILE,
    TRACE,
    TRIGGERS,
    imports_torch_neuronx,
    traced_names,
)


@register
class TracedArtifacts(Rule):
    """``torch.jit.save`` of a traced model and ``torch.jit.load`` of one: a traced Neuron model was a
    TorchScript file holding a NEFF; TorchNeuron compiles at run time and keeps compiled graphs in the
    NEFF cache (DOCS_COMPILE, DOCS_ENV), so the model is rebuilt and compiled again instead."""

    meta = RuleMeta(
        "NM402",
        "saved traced Neuron model (torch.jit.save / torch.jit.load)",
        safety=MANUAL,
        risks=frozenset({"checkpoint-format"}),
        summary=(
            "A traced model saved with torch.jit.save has no TorchNeuron counterpart: save the weights, rebuild "
            "and recompile the model at start-up; the NEFF cache keeps the compile work."
        ),
        docs=(DOCS_COMPILE, DOCS_ENV),
        # A load whose path names "neuron" is migrated without any torch_neuronx import: every spelling of
        # torch.jit.load / torch.jit.save names `jit`.
        triggers=(*TRIGGERS, b"jit"),
        example=Example(
            before=(
                "import torch\n"
                "import torch_neuronx\n\n"
                'model = torch.jit.load("resnet50_neuron.pt")\n'
            ),
            after=(
                "import torch\n"
                "import torch_neuronx\n\n"
                f"# TODO(neuron-migrate NM402): {RECOMPILE}\n"
                'model = torch.jit.load("resnet50_neuron.pt")\n'
            ),
        ),
    )
    follow_up_todos = True
    calls = {"torch.jit.save": "save", "torch.jit.load": "load"}

    def save(self, original: cst.Call, updated: cst.Call, qname: str):
        saved = first_argument(original, "m")
        if saved is None:
            return updated
        is_trace = isinstance(saved, cst.Call) and self.ctx.any_qualified_name(saved.func, TRACE)
        if is_trace or code_of(saved) in traced_names(self.ctx):
            self.ctx.manual(original, RECOMPILE)
        return updated

    def load(self, original: cst.Call, updated: cst.Call, qname: str):
        path = first_argument(original, "f")
        names_neuron = path is not None and "neuron" in code_of(path).lower()
        if names_neuron or imports_torch_neuronx(self.ctx):
            self.ctx.manual(original, RECOMPILE)
        return updated
