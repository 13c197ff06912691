"""NM430: NxD LoraConfig -> peft.LoraConfig"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import REVIEW, Edit, Example, register, RuleMeta
from neuron_migrate.rules.neuronx_distributed.common import (
    DOCS_PEFT,
    NXD_LORA_NAMES,
    PEFT_DEFAULTS,
    TRIGGERS,
    NxdRule,
    peft_only,
)
from neuron_migrate.rules.neuronx_trace.common import LegacyUse
from neuron_migrate.rules.tables.neuronx_distributed import ROWS


@register
class NxdLoraToPeft(NxdRule):
    """NxD's ``LoraConfig`` -> ``peft.LoraConfig`` (DOCS_PEFT): PEFT runs natively on TorchNeuron. A call
    that uses only r / lora_alpha / lora_dropout / target_modules is renamed; others are marked."""

    meta = RuleMeta(
        "NM430",
        "NxD LoraConfig -> peft.LoraConfig",
        safety=REVIEW,
        risks=frozenset({"numerics"}),
        summary=(
            "LoRA comes from peft: LoraConfig + get_peft_model. Arguments not given take peft's defaults, which "
            "differ from NxD's."
        ),
        docs=(DOCS_PEFT,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from neuronx_distributed.modules.lora import LoraConfig\n\n"
                'lora = LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "v_proj"])\n'
            ),
            after=(
                "import peft\n\n"
                "# neuron-migrate(NM430): apply it with `peft.get_peft_model(model, config)` (NxD applied it in "
                "initialize_parallel_model); peft default for what is not given: lora_dropout=0.0\n"
                'lora = peft.LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "v_proj"])\n'
            ),
        ),
    )
    apis = {"LoraConfig": "lora_config"}
    rows = ROWS

    @classmethod
    def automatic(cls, use: LegacyUse, answer) -> bool:
        return answer == "lora_config" and peft_only(use.node)

    def lora_config(self, original, updated, use: LegacyUse, api: str):
        if not peft_only(original):
            self.ctx.manual(self.meta, original, self._manual_message(original))
            return updated
        name = self.ctx.require_from_import("peft", "LoraConfig")
        given = {arg.keyword.value for arg in original.args}
        missing = [f"{key}={value}" for key, value in PEFT_DEFAULTS.items() if value and key not in given]
        review = "apply it with `peft.get_peft_model(model, config)` (NxD applied it in initialize_parallel_model)"
        if missing:
            review += f"; peft default for what is not given: {', '.join(missing)}"
        renamed = updated.with_changes(func=self.ctx.expr(name))
        return Edit(renamed, message="NxD LoraConfig -> peft.LoraConfig", review=review)

    @staticmethod
    def _manual_message(original) -> str:
        message = (
            "use `peft.LoraConfig(r=..., lora_alpha=..., lora_dropout=..., target_modules=[...])` + `get_peft_model`"
        )
        if isinstance(original, cst.Call):
            used = [arg.keyword.value for arg in original.args if arg.keyword and arg.keyword.value in NXD_LORA_NAMES]
            renames = [f"{name} -> {NXD_LORA_NAMES[name]}" if NXD_LORA_NAMES[name] else f"drop {name}" for name in used]
            if renames:
                message += f" ({', '.join(renames)})"
        return message
