"""NM634: the TorchNeuron recipe in a stock Hugging Face script's TrainingArguments"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules import hf_fields as hf
from neuron_migrate.rules.base import REVIEW, Edit, Example, RuleMeta, register
from neuron_migrate.rules.calls import literal, new_keyword, with_args
from neuron_migrate.rules.cuda.common import DOCS_BF16, DOCS_HF_TRAINING_ARGS, CudaRule, is_false, keyword
from neuron_migrate.rules.cuda.hf_training_arguments import TRAINING_ARGUMENTS
from neuron_migrate.rules.optimum_training.common import DOCS_COMPILE, DOCS_FINE_TUNING

# TRL's configs whose batches are padded by TRL's collator (pad_to_multiple_of, max_length)
SFT_CONFIGS = frozenset(name for name in TRAINING_ARGUMENTS if name.rsplit(".", 1)[1] == "SFTConfig")
# TRL's configs default bf16 to True unless fp16 is set (trl 1.16's _BaseConfig); transformers' to False
TRL_CONFIGS = frozenset(name for name in TRAINING_ARGUMENTS if name.startswith("trl."))

PARSERS = frozenset(
    {"transformers.HfArgumentParser", "transformers.hf_argparser.HfArgumentParser", "trl.TrlParser",
     "trl.scripts.TrlParser", "trl.scripts.utils.TrlParser"}
)
PARSER_NOTE = (
    "the training arguments come from the command line: the recipe passes --torch_compile true (and --bf16 true "
    "to transformers' TrainingArguments) where the script is launched"
)
COMPILE_ADDED = (
    "torch_compile=True added: the Trainer compiles the training step with the \"neuron\" backend on the neuron "
    "device (inductor on a GPU)"
)
BF16_ADDED = "bf16=True added: bf16 autocast, the neuron device's mixed precision (none was set)"
SPREAD_STEP = (
    "the recipe's settings may be in `**{spread}`: make sure the arguments get torch_compile=True and bf16 mixed "
    "precision (bf16=True; TRL's configs default to it unless fp16 is set)"
)
PADDING_KEPT = (
    'pad_to_multiple_of left to TRL\'s "auto": batches padded to a multiple of 128 on the neuron device, so few '
    "shapes compile"
)
PADDING_DROPPED = (
    'pad_to_multiple_of=None dropped: TRL\'s "auto" is None on a GPU and 128 on the neuron device, where a shape '
    "per batch would compile a graph per batch"
)
PADDING_FREE_STEP = (
    "padding-free batches are flattened to one sequence whose length changes every batch, a compilation each on "
    "the neuron device: pass padding_free=False (and packing_strategy=\"wrapped\" where packing)"
)
LONG_SEQUENCE_STEP = (
    f"max_length={{value}} is past {hf.RECIPE_MAX_LENGTH}, the longest sequence of the published Trainium "
    "fine-tuning recipe: check device memory and compile time before a long run"
)


@register
class HfRecipeArguments(CudaRule):
    """The Trainium recipe's settings in the ``TrainingArguments`` / TRL configs of a stock script (transformers
    5.24, trl 1.16): ``torch_compile=True`` (TrainingArguments picks the "neuron" backend on the neuron device,
    inductor elsewhere, so no backend is spelled out) where no ``torch_compile*`` keyword is passed, and
    ``bf16=True`` in transformers' arguments that set no precision (TRL's configs already default to bf16); an
    SFTConfig's ``max_length`` past the recipe's 2048 gets a TODO, and TRL's own padding default
    (``pad_to_multiple_of="auto"``: 128 on the neuron device) is kept and noted. The GPU's own settings (fp16,
    fused optimizers, inductor modes) are NM630's."""

    meta = RuleMeta(
        "NM634",
        "the TorchNeuron recipe in stock Hugging Face TrainingArguments",
        safety=REVIEW,
        risks=frozenset({"numerics", "performance"}),
        summary=(
            "torch_compile=True is added where the arguments do not compile (the neuron backend is the Trainer's "
            "default on the neuron device), bf16=True where transformers' arguments set no precision; TRL's "
            "padding default is kept, and an SFTConfig max_length past 2048 gets a TODO."
        ),
        docs=(DOCS_HF_TRAINING_ARGS, DOCS_COMPILE, DOCS_FINE_TUNING, DOCS_BF16),
        triggers=(b"Config", b"TrainingArguments"),
        example=Example(
            before=(
                "from transformers import TrainingArguments\n\n"
                'args = TrainingArguments("out", per_device_train_batch_size=8)\n'
            ),
            after=(
                "from transformers import TrainingArguments\n\n"
                f"# neuron-migrate(NM634): {COMPILE_ADDED}; {BF16_ADDED}\n"
                'args = TrainingArguments("out", per_device_train_batch_size=8, torch_compile=True, bf16=True)\n'
            ),
        ),
    )
    # a hook, not a call table: NM630 edits the same calls, and the first rule of a call table that changes a
    # call is its only one, while every hook sees the call as the rules before it left it
    prefixes = tuple(sorted(TRAINING_ARGUMENTS | PARSERS))

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        qname = self.ctx.any_qualified_name(original.func, TRAINING_ARGUMENTS)
        if qname is None:
            if self.ctx.any_qualified_name(original.func, PARSERS) and self._parses_arguments(original):
                self.ctx.report(self.meta, original, PARSER_NOTE)
            return updated
        # the keywords either node has: NM630 may have turned fp16 or torch_compile_mode into their recipe twins
        present = {a.keyword.value for call in (original, updated) for a in call.args if a.keyword is not None}
        if present & {"use_cpu", "no_cuda"}:
            return updated  # arguments of a CPU run
        args = list(updated.args)
        added, reviews, notes = [], [], []
        if qname in SFT_CONFIGS:
            args = self._sft_settings(original, args, notes)
        spread = next((a for a in original.args if a.star == "**"), None)
        if spread is not None:
            if not present & {"torch_compile", "bf16"}:
                self.ctx.manual(self.meta, original, SPREAD_STEP.format(spread=self.ctx.code(spread.value)))
            return self._edit(updated, args, added, reviews, notes)
        if not any(name.startswith("torch_compile") for name in present):
            added.append(new_keyword("torch_compile", "True"))
            reviews.append(COMPILE_ADDED)
        if qname not in TRL_CONFIGS and not present & {"bf16", "fp16", "bf16_full_eval", "fp16_full_eval"}:
            added.append(new_keyword("bf16", "True"))
            reviews.append(BF16_ADDED)
        return self._edit(updated, args, added, reviews, notes)

    def _parses_arguments(self, call: cst.Call) -> bool:
        """Does ``HfArgumentParser((..., TrainingArguments))`` (or TRL's parser) read training arguments?"""
        if not call.args:
            return False
        first = call.args[0].value
        classes = [e.value for e in first.elements] if isinstance(first, (cst.Tuple, cst.List)) else [first]
        return any(self.ctx.any_qualified_name(c, TRAINING_ARGUMENTS) for c in classes)

    @staticmethod
    def _edit(updated: cst.Call, args: list[cst.Arg], added, reviews: list[str], notes: list[str]):
        if not added and len(args) == len(updated.args):
            return updated
        call = with_args(updated, [*args, *added])
        if reviews:
            return Edit(call, review="; ".join(reviews + notes))
        return Edit(call, message="; ".join(notes), safe=True)

    def _sft_settings(self, call: cst.Call, args: list[cst.Arg], notes: list[str]) -> list[cst.Arg]:
        """TRL's padding default kept (an explicit None, which is that default on a GPU, goes), padding-free
        batches and a sequence longer than the recipe's marked."""
        length = keyword(call, "max_length")
        value = literal(length.value) if length is not None else None
        if isinstance(value, int) and not isinstance(value, bool) and value > hf.RECIPE_MAX_LENGTH:
            self.ctx.manual(self.meta, call, LONG_SEQUENCE_STEP.format(value=value))
        padding_free = keyword(call, "padding_free")
        if padding_free is not None and literal(padding_free.value) is not False:
            self.ctx.manual(self.meta, call, PADDING_FREE_STEP)
        padding = keyword(call, "pad_to_multiple_of")
        if padding is None:
            if not any(a.star == "**" for a in call.args):
                self.ctx.report(self.meta, call, PADDING_KEPT)
            return args
        if is_false(padding.value) and padding.value.value == "None":
            notes.append(PADDING_DROPPED)
            return [a for a in args if not (a.keyword is not None and a.keyword.value == "pad_to_multiple_of")]
        return args
