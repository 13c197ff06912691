"""NM218: a "flash_attention_2" default of an optimum-neuron script becomes "sdpa"."""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules import hf_fields as hf
from neuron_migrate.rules.base import REVIEW, Edit, Example, register, Rule, RuleMeta
from neuron_migrate.rules.optimum_inference.export_settings import FLASH_REVIEW
from neuron_migrate.rules.optimum_training.common import DOCS_HF, TRIGGERS

def imports_optimum_neuron(ctx) -> bool:
    modules = [*ctx.existing_imports, *(module for module, _ in ctx.existing_from_imports)]
    return any(module == "optimum.neuron" or module.startswith("optimum.neuron.") for module in modules)


@register
class FlashAttentionDefault(Rule):
    """A ``"flash_attention_2"`` default of an optimum-neuron script (an argparse option, a dataclass
    field) chose optimum-neuron's NKI attention kernel. It now reaches a stock ``from_pretrained``,
    where the name means the CUDA flash-attn package; ``"sdpa"`` is the stock path on neuron."""

    meta = RuleMeta(
        "NM218",
        'a "flash_attention_2" default of an optimum-neuron script becomes "sdpa"',
        safety=REVIEW,
        risks=frozenset({"performance"}),
        summary=(
            'In a file that imports optimum.neuron, default="flash_attention_2" of add_argument() / field(), and '
            'a class field defaulting to it, become "sdpa": transformers would ask for the CUDA flash-attn package.'
        ),
        docs=(DOCS_HF, "https://huggingface.co/docs/transformers/attention_interface"),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron import NeuronTrainer\n\n"
                'parser.add_argument("--attn_implementation", default="flash_attention_2")\n'
            ),
            after=(
                "# neuron-migrate(NM218): flash_attention_2 was optimum-neuron's NKI kernel; in stock transformers it "
                'is the CUDA flash-attn package: "sdpa" is the stock path on neuron, check speed\n'
                'parser.add_argument("--attn_implementation", default="sdpa")\n'
            ),
        ),
    )
    DEFAULT_TAKERS = ("add_argument", "field")

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        func = original.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
        if name not in self.DEFAULT_TAKERS or not imports_optimum_neuron(self.ctx):
            return updated
        args = list(updated.args)
        for position, arg in enumerate(args):
            if arg.keyword is not None and arg.keyword.value == "default" and self._is_flash(arg.value):
                args[position] = arg.with_changes(value=self._sdpa(arg.value))
                return self._edit(updated.with_changes(args=args))
        return updated

    def leave_AnnAssign(self, original: cst.AnnAssign, updated: cst.AnnAssign):
        if updated.value is None or not self._is_flash(updated.value) or not imports_optimum_neuron(self.ctx):
            return updated
        return self._edit(updated.with_changes(value=self._sdpa(updated.value)))

    @staticmethod
    def _is_flash(value: cst.BaseExpression) -> bool:
        return isinstance(value, cst.SimpleString) and value.evaluated_value == hf.FLASH_ATTENTION

    @staticmethod
    def _sdpa(value: cst.SimpleString) -> cst.SimpleString:
        return value.with_changes(value=f"{value.quote}{hf.NEURON_ATTENTION}{value.quote}")

    @staticmethod
    def _edit(replacement: cst.CSTNode) -> Edit:
        message = f'default "{hf.FLASH_ATTENTION}" -> "{hf.NEURON_ATTENTION}"'
        return Edit(replacement, message=message, review=FLASH_REVIEW)
