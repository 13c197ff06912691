"""NM402: saved traced Neuron model (torch.jit.save / torch.jit.load)"""

from __future__ import annotations

import ast
import os

import libcst as cst

from neuron_migrate.migrate.context import FileContext, code_of
from neuron_migrate.rules.base import MANUAL, Example, Fact, Rule, RuleMeta, register
from neuron_migrate.rules.calls import first_argument
from neuron_migrate.rules.neuronx_trace.common import (
    DOCS_COMPILE,
    DOCS_ENV,
    TRIGGERS,
    imports_neuron_package,
    load_step,
    save_step,
    traced_module,
    traced_names,
)
from neuron_migrate.rules.neuronx_trace.project_artifacts import (
    NEURON_FILE,
    SCRIPTED_SPELLINGS,
    SourceFacts,
    project_saves,
    source_facts,
)

NEURON_PACKAGES = ("torch_neuronx", "neuronx_distributed")
SCRIPTED = frozenset({"torch.jit.script", "torch.jit.trace"})
SOURCE_FACTS = Fact("traced_artifact_paths", lambda ctx: source_facts(ctx.text) or SourceFacts())
# File name -> the file around this one that saves a traced model under it (read once per file).
SAVED_AROUND = Fact("traced_artifacts_around", lambda ctx: project_saves(ctx.path) if _on_disk(ctx.path) else {})


@register
class TracedArtifacts(Rule):
    """A traced Neuron model was a TorchScript file holding a NEFF: scripts saved it
    (``torch.jit.save(traced, path)``, ``traced.save(path)``, ``torch.save(traced, path)``) and loaded it
    back (``torch.jit.load``, ``torch.load``), often in another script of the project. TorchNeuron
    compiles at run time and keeps compiled graphs in the NEFF cache (DOCS_COMPILE, DOCS_ENV), so the
    weights are saved instead and the model is rebuilt and compiled again where it was loaded.

    A load is marked when something says the file is a traced model, and the marker says what: this
    file or one around it saves a traced model under that name (see ``project_artifacts``), the file
    name names Neuron, or (``torch.jit.load`` only, TorchScript being what a trace made) the file
    imports torch_neuronx or neuronx_distributed."""

    meta = RuleMeta(
        "NM402",
        "saved traced Neuron model (torch.jit.save / torch.jit.load)",
        safety=MANUAL,
        risks=frozenset({"checkpoint-format"}),
        summary=(
            "A traced model saved to a file has no TorchNeuron counterpart: save the weights, rebuild and "
            "recompile the model where it was loaded; the NEFF cache keeps the compile work. Loads of a traced "
            "file are found in the script that traced it and in the scripts around it."
        ),
        docs=(DOCS_COMPILE, DOCS_ENV),
        # A load whose path names "neuron" is migrated without any torch_neuronx import: every spelling of
        # torch.jit.load / torch.jit.save names `jit`; a project's serving script may use torch.load.
        triggers=(*TRIGGERS, b"neuronx_distributed", b"jit", b"torch.load"),
        example=Example(
            before=(
                "import torch\n"
                "import torch_neuronx\n\n"
                'model = torch.jit.load("resnet50_neuron.pt")\n'
            ),
            after=(
                "import torch\n"
                "import torch_neuronx\n\n"
                f"# TODO(neuron-migrate NM402): {load_step('the file name `resnet50_neuron.pt`')}\n"
                'model = torch.jit.load("resnet50_neuron.pt")\n'
            ),
        ),
    )
    follow_up_todos = True
    calls = {"torch.jit.save": "jit_save", "torch.save": "torch_save", "torch.jit.load": "jit_load", "torch.load": "torch_load"}

    # ----- saves ----------------------------------------------------------------------------------

    def jit_save(self, original: cst.Call, updated: cst.Call, qname: str):
        return self._save(original, updated, first_argument(original, "m"), torchscript=True)

    def torch_save(self, original: cst.Call, updated: cst.Call, qname: str):
        return self._save(original, updated, first_argument(original, "obj"), torchscript=False)

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        """``traced.save(path)``: ScriptModule's own save, which a compiled module does not have."""
        func = original.func
        if isinstance(func, cst.Attribute) and func.attr.value == "save" and original.args:
            return self._save(original, updated, func.value, torchscript=False)
        return updated

    def _save(self, original: cst.Call, updated: cst.Call, saved: cst.BaseExpression | None, torchscript: bool):
        """A save of a traced model; with ``torchscript`` (torch.jit.save), a save of anything but a
        plain TorchScript model in a Neuron script, where TorchScript is what a trace made."""
        if saved is None:
            return updated
        module = traced_module(self.ctx, saved)
        if module is None:
            module = traced_names(self.ctx).get(code_of(saved).strip())
        if module is None and torchscript and not self._scripted(saved):
            module = "" if any(imports_neuron_package(self.ctx, p) for p in NEURON_PACKAGES) else None
        if module is not None:
            self.ctx.manual(self.meta, original, save_step(module))
        return updated

    def _scripted(self, saved: cst.BaseExpression) -> bool:
        """``torch.jit.script(m)`` or ``torch.jit.trace(m, x)``, or a name assigned one in this file."""
        code = code_of(saved).strip()
        values = self.ctx.fact(SOURCE_FACTS).values.get(code, ()) if isinstance(saved, cst.Name) else ()
        calls = [saved] if isinstance(saved, cst.Call) else []
        if any(self.ctx.any_qualified_name(call.func, SCRIPTED) for call in calls):
            return True
        return any(isinstance(v, ast.Call) and ast.unparse(v.func).startswith(SCRIPTED_SPELLINGS) for v in values)

    # ----- loads ----------------------------------------------------------------------------------

    def jit_load(self, original: cst.Call, updated: cst.Call, qname: str):
        return self._load(original, updated, first_argument(original, "f"), torchscript=True)

    def torch_load(self, original: cst.Call, updated: cst.Call, qname: str):
        return self._load(original, updated, first_argument(original, "f"), torchscript=False)

    def _load(self, original: cst.Call, updated: cst.Call, path: cst.BaseExpression | None, torchscript: bool):
        evidence = loads_traced_model(self.ctx, path, torchscript) if path is not None else None
        if evidence is not None:
            self.ctx.manual(self.meta, original, load_step(evidence))
        return updated


def loads_traced_model(ctx: FileContext, path: cst.BaseExpression, torchscript: bool) -> str | None:
    """What says the file at ``path`` holds a traced Neuron model, in words, or None. ``torchscript``:
    the load reads TorchScript (``torch.jit.load``), which in a Neuron script is a trace."""
    facts = ctx.fact(SOURCE_FACTS)
    names = _file_names(code_of(path), facts)
    for name in names:
        if name in facts.saves:
            return f"this file saves a traced model as `{name}`"
    saved_around = ctx.fact(SAVED_AROUND) if names else {}
    for name in names:
        if name in saved_around:
            return f"`{saved_around[name]}` saves a traced model as `{name}`"
    imported = next((p for p in NEURON_PACKAGES if imports_neuron_package(ctx, p)), None)
    named = next((name for name in names if NEURON_FILE.search(name)), None)
    if named is not None and (torchscript or imported):
        return f"the file name `{named}`"
    if not torchscript:
        return None
    if "neuron" in code_of(path).lower():
        return "its path names neuron"
    return f"TorchScript loaded in a {imported} script" if imported else None


def _file_names(code: str, facts: SourceFacts) -> list[str]:
    try:
        expr = ast.parse(f"({code.strip()})", mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return []
    return facts.names_of(expr)


def _on_disk(path: str) -> bool:
    """Whether ``path`` is in a real folder whose other files can be read: the file itself, or a file
    a notebook writes (``%%writefile code/inference.py``) into a folder that exists. A bare name that
    is not a file here (code read from stdin, a test case) has no project around it."""
    folder = os.path.dirname(path)
    return os.path.isfile(path) or (bool(folder) and os.path.isdir(folder))
