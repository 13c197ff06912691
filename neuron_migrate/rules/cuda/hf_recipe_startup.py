"""NM635: the TorchNeuron start-up settings of a stock Hugging Face training script"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of

from neuron_migrate.rules.base import SAFE, Example, RuleMeta, register
from neuron_migrate.rules.cuda.common import CudaRule
from neuron_migrate.rules.optimum_training.common import (
    ASYNC_LOAD_WHY,
    DOCS_COMPILE,
    DOCS_FINE_TUNING,
    DYNAMIC_SHAPES_WHY,
    STARTUP,
)

# The trainers of transformers 5.24 and trl 1.16, under every import path
_TRAINERS = {
    "transformers": ("Trainer", "Seq2SeqTrainer"),
    "transformers.trainer": ("Trainer",),
    "transformers.trainer_seq2seq": ("Seq2SeqTrainer",),
    "trl": ("SFTTrainer", "DPOTrainer", "GRPOTrainer", "KTOTrainer", "RewardTrainer", "RLOOTrainer"),
    "trl.trainer": ("SFTTrainer", "DPOTrainer", "GRPOTrainer", "KTOTrainer", "RewardTrainer", "RLOOTrainer"),
    "trl.trainer.sft_trainer": ("SFTTrainer",),
    "trl.trainer.dpo_trainer": ("DPOTrainer",),
    "trl.trainer.grpo_trainer": ("GRPOTrainer",),
}
TRAINERS = frozenset(f"{module}.{name}" for module, names in _TRAINERS.items() for name in names)
SETTINGS = 'torch._dynamo.config.automatic_dynamic_shapes = False and os.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1")'
LATE_IMPORT_STEP = (
    f"set {SETTINGS} once, right after this file imports {{names}}, before the model is loaded: start-up settings "
    "go below the leading imports, and {names} is imported further down (a later notebook cell)"
)
LAZY_IMPORT_STEP = (
    f"set {SETTINGS} once, right after this file imports {{names}}, before the model is loaded: start-up settings "
    "go below the leading imports, and {names} is imported only inside a function or block here"
)


@register
class HfRecipeStartup(CudaRule):
    """The two start-up settings of the Trainium recipe (the same as NM217 gives a migrated optimum-neuron
    script), added once to a stock script that builds a Hugging Face trainer or subclasses one:
    ``torch._dynamo.config.automatic_dynamic_shapes = False`` (the neuron backend compiles static shapes) and
    ``HF_DEACTIVATE_ASYNC_LOAD=1`` (threaded weight loading can hang on the neuron device). On a GPU the first
    makes dynamo recompile per new shape rather than trace a dynamic graph, the second loads weights in one
    thread."""

    meta = RuleMeta(
        "NM635",
        "TorchNeuron start-up settings of a stock Hugging Face training script",
        safety=SAFE,
        risks=frozenset({"performance"}),
        summary=(
            "torch._dynamo.config.automatic_dynamic_shapes = False and "
            'os.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1") after the imports of a file that builds a '
            "Trainer or a TRL trainer, unless the file already sets them."
        ),
        docs=(DOCS_COMPILE, DOCS_FINE_TUNING),
        triggers=(b"Trainer",),
        example=Example(
            before=(
                "import os\n"
                "import torch\n"
                "from transformers import Trainer\n\n"
                "trainer = Trainer(model=model, args=args)\n"
            ),
            after=(
                "import os\n"
                "import torch\n"
                "from transformers import Trainer\n\n" + STARTUP + "trainer = Trainer(model=model, args=args)\n"
            ),
        ),
    )
    calls = {qname: "trainer" for qname in TRAINERS}

    def trainer(self, original: cst.Call, updated: cst.Call, qname: str):
        self.add_settings(original)
        return updated

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef):
        if any(self.ctx.any_qualified_name(base.value, TRAINERS) for base in original.bases):
            self.add_settings(original)
        return updated

    def add_settings(self, node: cst.CSTNode) -> None:
        code = "\n".join(line for line in self.ctx.text.splitlines() if not line.lstrip().startswith("#"))
        if "automatic_dynamic_shapes" in code and "HF_DEACTIVATE_ASYNC_LOAD" in code:
            return  # the file makes both settings (a comment naming them, this rule's TODO included, does not)
        late = [name for name in ("torch", "os") if imported_late(self.ctx.module.body, name)]
        if late:
            # the settings go under the leading imports, where a module imported later is not bound yet
            self.ctx.manual(self.meta, node, LATE_IMPORT_STEP.format(names=" and ".join(late)))
            return
        lazy = [name for name in ("torch", "os") if imported_lazily(self.ctx.module, name)]
        if lazy:
            # an added import would go beside that lazy one, in its block, while the settings run at start-up
            self.ctx.manual(self.meta, node, LAZY_IMPORT_STEP.format(names=" and ".join(lazy)))
            return
        torch = self.ctx.require_import("torch")
        os_name = self.ctx.require_import("os")
        self.ctx.add_setup(
            self.meta,
            node,
            f"{torch}._dynamo.config.automatic_dynamic_shapes = False",
            DYNAMIC_SHAPES_WHY,
            unless="automatic_dynamic_shapes",
        )
        self.ctx.add_setup(
            self.meta,
            node,
            f'{os_name}.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1")',
            ASYNC_LOAD_WHY,
            unless="HF_DEACTIVATE_ASYNC_LOAD",
        )


def imported_late(body, module: str) -> bool:
    """Is ``module`` imported at module level only below the leading import block (a notebook's later cell),
    where the start-up settings that read it are put?"""
    leading = True
    bound_early = bound_late = False
    for index, statement in enumerate(body):
        is_import = isinstance(statement, cst.SimpleStatementLine) and all(
            isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
        )
        docstring = index == 0 and isinstance(statement, cst.SimpleStatementLine) and isinstance(
            statement.body[0], cst.Expr) and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
        leading = leading and (is_import or docstring)
        if is_import and any(_binds(small, module) for small in statement.body):
            bound_early = bound_early or leading
            bound_late = bound_late or not leading
    return bound_late and not bound_early


def imported_lazily(module_node: cst.Module, module: str) -> bool:
    """Is ``module`` imported only inside a function or class (``def main(): ... import torch``), never where the
    module itself runs (its top level, or a ``try`` / ``if`` there)?"""
    inside = outside = False
    stack: list[tuple[cst.CSTNode, bool]] = [(statement, False) for statement in module_node.body]
    while stack:
        node, in_def = stack.pop()
        if isinstance(node, cst.Import) and _binds(node, module):
            inside, outside = inside or in_def, outside or not in_def
        nested = in_def or isinstance(node, (cst.FunctionDef, cst.ClassDef))
        stack.extend((child, nested) for child in node.children if isinstance(child, cst.CSTNode))
    return inside and not outside


def _binds(node: cst.Import | cst.ImportFrom, module: str) -> bool:
    """Does ``import module`` (``import module.x``) bind ``module`` under its own name here?"""
    if not isinstance(node, cst.Import):
        return False
    for alias in node.names:
        dotted = code_of(alias.name)
        if alias.asname is None and dotted.split(".")[0] == module:
            return True
    return False
