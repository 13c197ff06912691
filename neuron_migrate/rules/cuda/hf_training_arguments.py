"""NM630: Hugging Face TrainingArguments of a GPU run -> the neuron device's"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import REVIEW, Edit, Example, RuleMeta, register
from neuron_migrate.rules.calls import with_args
from neuron_migrate.rules.cuda.common import (
    DOCS_BF16,
    DOCS_DISTRIBUTED_CONFIG,
    DOCS_HF_TRAINING_ARGS,
    CudaRule,
    is_false,
    is_true,
    keyword,
    string_value,
)

# TrainingArguments and the TRL configs built on it (trl 1.16), under every import path
_CLASSES = {
    "transformers": ("TrainingArguments", "Seq2SeqTrainingArguments"),
    "transformers.training_args": ("TrainingArguments",),
    "transformers.training_args_seq2seq": ("Seq2SeqTrainingArguments",),
    "trl": ("SFTConfig", "DPOConfig", "GRPOConfig", "KTOConfig", "RewardConfig", "RLOOConfig", "DistillationConfig"),
    "trl.trainer": ("SFTConfig", "DPOConfig", "GRPOConfig", "KTOConfig", "RewardConfig", "RLOOConfig"),
    "trl.trainer.sft_config": ("SFTConfig",),
    "trl.trainer.dpo_config": ("DPOConfig",),
    "trl.trainer.grpo_config": ("GRPOConfig",),
    "trl.trainer.kto_config": ("KTOConfig",),
    "trl.trainer.reward_config": ("RewardConfig",),
    "trl.trainer.rloo_config": ("RLOOConfig",),
}
TRAINING_ARGUMENTS = frozenset(f"{module}.{name}" for module, names in _CLASSES.items() for name in names)

BF16_REVIEW = (
    "fp16 mixed precision made bf16, the neuron device's (no loss scaling); on a GPU bf16 needs an Ampere or "
    "later card"
)
FP16_STEP = (
    "fp16 is chosen at run time here: the neuron device computes in bf16, so pass bf16=True where fp16 would "
    "be on (fp16 loss scaling on the neuron device is unverified)"
)
# optim values whose kernel is CUDA's: the plain PyTorch AdamW computes the same update
FUSED_OPTIMIZERS = frozenset({"adamw_torch_fused", "adamw_apex_fused"})
FUSED_REVIEW = 'a fused CUDA AdamW made "adamw_torch" (the same update, without the CUDA kernel)'
TF32_NOTE = "tf32=True deleted: TF32 is a CUDA matmul mode, and TrainingArguments raises without a CUDA GPU"
HALF_BACKEND_NOTE = "half_precision_backend deleted: the GPU's fp16 backend choice (transformers 5 has no such field)"
COMPILE_REVIEW = (
    'torch_compile_mode (an inductor mode) made torch_compile=True: the Trainer compiles with the "neuron" '
    "backend on the neuron device, which takes no mode"
)
COMPILE_DROPPED = "torch_compile_mode deleted: an inductor mode; torch_compile=True already compiles"
SHARDING_STEP = {
    "deepspeed": (
        "DeepSpeed is CUDA-only (no neuron build): shard with FSDP2 instead, under torchrun: the Trainer's "
        'fsdp="full_shard" (FSDP2, the default "version" of fsdp_config in transformers 5), or from_pretrained(..., '
        "distributed_config=DistributedConfig(fsdp_size=N)); map the ZeRO stage of the DeepSpeed config to it"
    ),
    "fsdp": (
        "the Trainer's FSDP on the neuron device: use FSDP2 (fsdp_config \"version\": 2, transformers 5's default) "
        "under torchrun, "
        "or from_pretrained(..., distributed_config=DistributedConfig(fsdp_size=N)); check the wrap policy and "
        "mixed precision of the fsdp_config against bf16"
    ),
}


@register
class HfTrainingArguments(CudaRule):
    """``TrainingArguments`` / ``Seq2SeqTrainingArguments`` / TRL's configs written for a GPU (checked against
    transformers 5.24 and trl 1.16): ``fp16=True`` -> ``bf16=True`` and ``fp16_full_eval`` ->
    ``bf16_full_eval`` (DOCS_BF16); a fused CUDA AdamW (``optim="adamw_torch_fused"`` / ``"adamw_apex_fused"``)
    -> ``"adamw_torch"``; ``tf32=True`` goes (TrainingArguments raises without a CUDA GPU);
    ``half_precision_backend`` goes (gone in transformers 5); ``torch_compile_mode`` (inductor's) ->
    ``torch_compile=True``, which compiles with the neuron backend. ``deepspeed=`` / ``fsdp=`` get a TODO
    pointing at FSDP2 or ``DistributedConfig``. The 8-bit bitsandbytes optimizers are NM633's."""

    meta = RuleMeta(
        "NM630",
        "Hugging Face TrainingArguments of a GPU run -> the neuron device's",
        safety=REVIEW,
        risks=frozenset({"numerics", "performance"}),
        summary=(
            "fp16 becomes bf16, fused CUDA optimizers the plain AdamW, tf32 and inductor modes go; DeepSpeed and "
            "FSDP settings get a TODO with the FSDP2 route."
        ),
        docs=(DOCS_HF_TRAINING_ARGS, DOCS_BF16, DOCS_DISTRIBUTED_CONFIG),
        triggers=(b"Config", b"TrainingArguments"),
        example=Example(
            before=(
                "from transformers import TrainingArguments\n\n"
                'args = TrainingArguments("out", fp16=True, optim="adamw_torch_fused", tf32=True, torch_compile=True)\n'
            ),
            after=(
                "from transformers import TrainingArguments\n\n"
                f"# neuron-migrate(NM630): {BF16_REVIEW}; {FUSED_REVIEW}\n"
                'args = TrainingArguments("out", bf16=True, optim="adamw_torch", torch_compile=True)\n'
            ),
        ),
    )
    calls = {qname: "arguments" for qname in TRAINING_ARGUMENTS}

    def arguments(self, original: cst.Call, updated: cst.Call, qname: str):
        args = list(updated.args)
        reviews: list[str] = []
        notes: list[str] = []
        for old, new in (("fp16", "bf16"), ("fp16_full_eval", "bf16_full_eval")):
            args = self._half(original, args, old, new, reviews)
        for name, note in (("tf32", TF32_NOTE), ("half_precision_backend", HALF_BACKEND_NOTE)):
            arg = keyword(updated, name)
            if arg is not None and (name != "tf32" or is_true(arg.value)):
                args = [a for a in args if a is not arg]
                notes.append(note)
        optim = keyword(updated, "optim")
        if optim is not None and string_value(optim.value) in FUSED_OPTIMIZERS:
            args = [a.with_changes(value=cst.SimpleString('"adamw_torch"')) if a is optim else a for a in args]
            reviews.append(FUSED_REVIEW)
        args = self._compile_mode(updated, args, reviews, notes)
        for name, step in SHARDING_STEP.items():
            arg = keyword(original, name)
            if arg is not None and not is_false(arg.value) and string_value(arg.value) != "":
                self.ctx.manual(self.meta, original, step)
        if not reviews and not notes:
            return updated
        call = with_args(updated, args)
        if reviews:
            return Edit(call, review="; ".join(reviews))
        return Edit(call, message="; ".join(notes), safe=True)

    def _half(self, original: cst.Call, args: list[cst.Arg], old: str, new: str, reviews: list[str]) -> list[cst.Arg]:
        """``fp16=True`` -> ``bf16=True`` (where ``bf16=`` is passed too, it says True and fp16 goes); a computed
        fp16 gets a TODO."""
        arg = next((a for a in args if a.keyword is not None and a.keyword.value == old), None)
        if arg is None or is_false(arg.value):
            return args
        if not is_true(arg.value):
            self.ctx.manual(self.meta, original, FP16_STEP)
            return args
        if BF16_REVIEW not in reviews:
            reviews.append(BF16_REVIEW)
        other = next((a for a in args if a.keyword is not None and a.keyword.value == new), None)
        if other is not None:
            # ``fp16=True, bf16=False``: the one precision flag left says bf16
            return [a.with_changes(value=cst.Name("True")) if a is other else a for a in args if a is not arg]
        return [a.with_changes(keyword=cst.Name(new)) if a is arg else a for a in args]

    @staticmethod
    def _compile_mode(call: cst.Call, args: list[cst.Arg], reviews: list[str], notes: list[str]) -> list[cst.Arg]:
        mode = keyword(call, "torch_compile_mode")
        if mode is None or is_false(mode.value):
            return args
        if keyword(call, "torch_compile") is not None:
            notes.append(COMPILE_DROPPED)
            return [a for a in args if a is not mode]
        reviews.append(COMPILE_REVIEW)
        compiled = mode.with_changes(keyword=cst.Name("torch_compile"), value=cst.Name("True"))
        return [compiled if a is mode else a for a in args]
