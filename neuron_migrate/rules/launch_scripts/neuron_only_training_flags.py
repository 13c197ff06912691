"""NM512: NeuronTrainingArguments-only command-line flags removed"""

from __future__ import annotations

from neuron_migrate.migrate.shell import Command, ShellScript
from neuron_migrate.rules.base import REVIEW, Example, RuleMeta, register
from neuron_migrate.rules.hf_fields import NEURON_ONLY_FIELDS, PARALLEL_FIELDS
from neuron_migrate.rules.launch_scripts.common import (
    COMPILE_FLAGS,
    DOCS_DISTRIBUTED_CONFIG,
    DOCS_HF,
    DOCS_TRAINING_ARGS,
    DOCS_TRN2_LAYOUT,
    TRN1_NODE_CORES,
    _COMPILE_REVIEW,
    _TRN2_CORES,
    ShellRule,
    _anchor,
    _command_span,
    _indexed_array,
)
from neuron_migrate.rules.launch_scripts.launchers import flag_name, launch_of
from neuron_migrate.rules.launch_scripts.training_flags import (
    NeuronFlag,
    flag_reason,
    neuron_flags,
    _trn1_node_count,
    zero_1_reason,
    zero_1_text,
)


@register
class NeuronOnlyTrainingFlags(ShellRule):
    """NeuronTrainingArguments-only flags on a Hugging Face launch are removed (DOCS_TRAINING_ARGS)."""

    meta = RuleMeta(
        "NM512",
        "NeuronTrainingArguments-only command-line flags removed",
        safety=REVIEW,
        risks=frozenset({"launch", "collectives", "numerics"}),
        summary=(
            "--tensor_parallel_size, --zero_1, --pipeline_parallel_size, --use_autocast... are not TrainingArguments "
            "fields: HfArgumentParser would reject them. Parallel sizes move into the script (DistributedConfig); "
            "--zero_1 becomes FSDP there, its sizes named when the launch gives the process count. A flag the "
            "launched script still reads stays: its own dataclass takes the field over (NM221)."
        ),
        docs=(DOCS_TRAINING_ARGS, DOCS_DISTRIBUTED_CONFIG, DOCS_HF, DOCS_TRN2_LAYOUT),
        triggers=tuple(sorted({f"--{name}".encode() for name in NEURON_ONLY_FIELDS})),
        kind="shell",
        example=Example(
            before=(
                "export HF_DEACTIVATE_ASYNC_LOAD=1\n"
                "torchrun --nproc_per_node=32 train.py \\\n"
                "    --output_dir out \\\n"
                "    --tensor_parallel_size 8 \\\n"
                "    --zero_1 true\n"
            ),
            after=(
                "export HF_DEACTIVATE_ASYNC_LOAD=1\n"
                "# neuron-migrate(NM512): `--tensor_parallel_size 8`: "
                + flag_reason("tensor_parallel_size", "8")[0]
                + f"; `--zero_1 true`: {zero_1_text(32, 8)}; {_TRN2_CORES.format(count=TRN1_NODE_CORES)}\n"
                f"# neuron-migrate(NM513): {_COMPILE_REVIEW}\n"
                "torchrun --nproc_per_node=32 train.py \\\n"
                "    --output_dir out \\\n"
                f"    {COMPILE_FLAGS}\n"
            ),
        ),
    )

    def check(self, script: ShellScript) -> None:
        ctx, meta = self.ctx, self.meta
        handled: set[tuple] = set()
        for command in script.commands:
            launch = launch_of(script, command)
            if launch is None:
                continue
            reviews: dict[int, list[str]] = {}
            for flag in neuron_flags(script, launch):
                place = (flag.flag.key, flag.flag.index) if flag.flag.word else (command.index, flag.written)
                if place in handled:
                    continue
                handled.add(place)
                self._remove(script, command, launch, flag, reviews)
            cores = _trn1_node_count(script, command)
            # the parallel sizes may stay on the line (the script's own dataclass takes them over)
            if cores and any(flag_name(arg.value) in PARALLEL_FIELDS for arg in launch.args):
                for texts in reviews.values():
                    texts.append(_TRN2_CORES.format(count=cores))
            for anchor, texts in reviews.items():
                ctx.marker(meta, REVIEW, "; ".join(texts), anchor)

    def _remove(self, script: ShellScript, command: Command, launch, flag: NeuronFlag, reviews) -> None:
        ctx, meta = self.ctx, self.meta
        value = flag.value.value if flag.value else flag.flag.value.partition("=")[2] or None
        reason, review = flag_reason(flag.name, value)
        if flag.name == "zero_1" and review:
            reason, review = zero_1_reason(script, command, launch)
        anchor = _anchor(script, flag.flag.key, command)
        words = [a.word for a in (flag.flag, flag.value) if a is not None and a.word is not None]
        span = (words[0].start, words[-1].end) if words else _command_span(command)
        if not flag.editable or _indexed_array(script, flag.flag.key):
            ctx.manual(meta, *span, f"remove `{flag.written}` from the variable it comes from: {reason}", anchor)
            return
        if ctx.suppressed(meta.id, span, (anchor, anchor + 1), _command_span(command)):
            ctx.skip(meta, *span)
            return
        ctx.remove(flag.flag.key, flag.flag.index)
        if flag.value is not None:
            ctx.remove(flag.value.key, flag.value.index)
        message = f"`{flag.written}` removed: {reason}"
        if review:
            ctx.report(meta, *span, message, REVIEW, applied=True, fix=f"`{flag.written}`: {reason}")
            reviews.setdefault(anchor, []).append(f"`{flag.written}`: {reason}")
        else:
            ctx.safe(meta, *span, message)
