"""NM633: bitsandbytes quantization has no neuron build"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.cuda.common import DOCS_BF16, DOCS_HF_QUANTIZATION, CudaRule, is_false, keyword, string_value

QUANTIZED_STEP = (
    "bitsandbytes (4/8-bit loading, BitsAndBytesConfig, 8-bit optimizers) has no neuron build: load the model "
    "in bfloat16 (dtype=torch.bfloat16, no quantization_config or load_in_*bit) and train LoRA adapters on it "
    "(peft's get_peft_model, without prepare_model_for_kbit_training); remove the quantization as a whole, or "
    "keep it for GPU runs behind a device check"
)
_CONFIGS = (
    "transformers.BitsAndBytesConfig",
    "transformers.utils.quantization_config.BitsAndBytesConfig",
    "diffusers.BitsAndBytesConfig",
    "peft.prepare_model_for_kbit_training",
    "peft.utils.other.prepare_model_for_kbit_training",
    "peft.utils.prepare_model_for_kbit_training",
)
_CONFIG_NAMES = frozenset(_CONFIGS)
_LOAD_FLAGS = ("load_in_4bit", "load_in_8bit")
# TrainingArguments(optim=...) values whose optimizer is bitsandbytes' (transformers 5.24's OptimizerNames)
BNB_OPTIMIZERS = frozenset({
    "adamw_bnb_8bit", "adamw_8bit", "ademamix_8bit", "lion_8bit", "lion_32bit", "paged_adamw_32bit",
    "paged_adamw_8bit", "paged_ademamix_32bit", "paged_ademamix_8bit", "paged_lion_32bit", "paged_lion_8bit",
    "rmsprop_bnb", "rmsprop_bnb_8bit", "rmsprop_bnb_32bit", "ademamix",
})


@register
class Bitsandbytes(CudaRule):
    """bitsandbytes quantization: ``load_in_4bit`` / ``load_in_8bit`` (any call), ``BitsAndBytesConfig``,
    ``prepare_model_for_kbit_training``, ``import bitsandbytes`` (whose TODO stands for every ``bnb.*`` use), and the bitsandbytes optimizers
    of ``TrainingArguments(optim=...)``. bitsandbytes ships CUDA kernels only, so there is nothing to rewrite
    to; removing half of a QLoRA setup breaks it, so nothing is removed: each site gets a TODO with the bf16
    LoRA route (the neuron device trains in bf16, DOCS_BF16)."""

    meta = RuleMeta(
        "NM633",
        "bitsandbytes quantization has no neuron build",
        safety=MANUAL,
        risks=frozenset({"numerics"}),
        summary="4/8-bit loading and 8-bit optimizers get a TODO: load in bf16 and train LoRA adapters instead.",
        docs=(DOCS_HF_QUANTIZATION, DOCS_BF16),
        triggers=(b"bitsandbytes", b"BitsAndBytes", b"load_in_", b"kbit", *(b'"' + o.encode() for o in ("paged_", "adamw_8bit", "adamw_bnb"))),
        example=Example(
            before=(
                "from transformers import AutoModelForCausalLM\n\n"
                'model = AutoModelForCausalLM.from_pretrained("gpt2", load_in_8bit=True)\n'
            ),
            after=(
                "from transformers import AutoModelForCausalLM\n\n"
                f"# TODO(neuron-migrate NM633): {QUANTIZED_STEP}\n"
                'model = AutoModelForCausalLM.from_pretrained("gpt2", load_in_8bit=True)\n'
            ),
        ),
    )
    calls = {qname: "quantized" for qname in _CONFIGS}

    def quantized(self, original: cst.Call, updated: cst.Call, qname: str):
        self.ctx.manual(self.meta, original, QUANTIZED_STEP)
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        if self.ctx.any_qualified_name(original.func, _CONFIG_NAMES):
            return updated  # BitsAndBytesConfig(load_in_4bit=True): its own TODO says it
        flags = [keyword(original, flag) for flag in _LOAD_FLAGS]
        optim = keyword(original, "optim")
        if any(f is not None and not is_false(f.value) for f in flags) or (
            optim is not None and string_value(optim.value) in BNB_OPTIMIZERS
        ):
            self.ctx.manual(self.meta, original, QUANTIZED_STEP)
        return updated

    def leave_Import(self, original: cst.Import, updated: cst.Import):
        if any(cst.Module([]).code_for_node(a.name).split(".")[0] == "bitsandbytes" for a in original.names):
            self.ctx.manual(self.meta, original, QUANTIZED_STEP)
        return updated

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom):
        module = cst.Module([]).code_for_node(original.module) if original.module is not None else ""
        if not original.relative and module.split(".")[0] == "bitsandbytes":
            self.ctx.manual(self.meta, original, QUANTIZED_STEP)
        return updated
