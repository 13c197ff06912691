"""NM517: TrainingArguments flags removed or renamed in transformers 5"""

from __future__ import annotations

from neuron_migrate.migrate.shell import Command, ShellScript
from neuron_migrate.rules.base import REVIEW, Example, RuleMeta, register
from neuron_migrate.rules.launch_scripts.common import (
    DOCS_TRAINING_ARGS,
    ShellRule,
    _anchor,
    _command_span,
    _indexed_array,
)
from neuron_migrate.rules.launch_scripts.launchers import launch_of
from neuron_migrate.rules.launch_scripts.training_flags import (
    FLAG_EDITS,
    TENSORBOARD_DIR,
    _OVERWRITE_GONE,
    FlagEdit,
    NeuronFlag,
    changed_trainer_flags,
)


@register
class ChangedTrainerFlags(ShellRule):
    """Command-line flags of TrainingArguments fields the target transformers release removed or renamed
    (``--overwrite_output_dir``, ``--warmup_ratio``, ``--logging_dir``, ``--gradient_checkpointing``):
    the same field map as for Python keywords (:mod:`~neuron_migrate.rules.hf_fields`)."""

    meta = RuleMeta(
        "NM517",
        "TrainingArguments flags removed or renamed in transformers 5",
        safety=REVIEW,
        risks=frozenset({"launch"}),
        summary=(
            "HfArgumentParser refuses a flag for a field TrainingArguments no longer has: --overwrite_output_dir "
            "goes, --warmup_ratio becomes --warmup_steps (which takes a ratio below 1), --logging_dir becomes "
            "TENSORBOARD_LOGGING_DIR for the launch, and renamed fields take their new name."
        ),
        docs=(DOCS_TRAINING_ARGS,),
        triggers=tuple(sorted({f"--{name}".encode() for name in FLAG_EDITS})),
        kind="shell",
        example=Example(
            before=(
                "export HF_DEACTIVATE_ASYNC_LOAD=1\n"
                "torchrun --nproc_per_node=2 train.py --output_dir out --overwrite_output_dir \\\n"
                "    --warmup_ratio 0.1 --logging_dir logs\n"
            ),
            after=(
                "export HF_DEACTIVATE_ASYNC_LOAD=1\n"
                f"# neuron-migrate(NM517): `--overwrite_output_dir`: {_OVERWRITE_GONE}\n"
                f"{TENSORBOARD_DIR}=logs torchrun --nproc_per_node=2 train.py --output_dir out \\\n"
                "    --warmup_steps 0.1\n"
            ),
        ),
    )

    def check(self, script: ShellScript) -> None:
        handled: set[tuple] = set()
        for command in script.commands:
            launch = launch_of(script, command)
            if launch is None:
                continue
            flags = changed_trainer_flags(script, launch)
            reviews: dict[int, list[str]] = {}
            for flag in flags:
                place = (flag.flag.key, flag.flag.index) if flag.flag.word else (command.index, flag.written)
                if place in handled:
                    continue
                handled.add(place)
                edit = FLAG_EDITS[flag.name](flag, launch)
                self._apply(script, command, flag, edit, reviews)
            for anchor, texts in reviews.items():
                self.ctx.marker(self.meta, REVIEW, "; ".join(texts), anchor)

    def _apply(self, script, command: Command, flag: NeuronFlag, edit: FlagEdit, reviews) -> None:
        ctx, meta = self.ctx, self.meta
        anchor = _anchor(script, flag.flag.key, command)
        words = [a.word for a in (flag.flag, flag.value) if a is not None and a.word is not None]
        span = (words[0].start, words[-1].end) if words else _command_span(command)
        verb = f"rename `{flag.written}` to --{edit.rename} in" if edit.rename else f"remove `{flag.written}` from"
        written_here = flag.flag.word is not None and flag.flag.value in flag.flag.word.raw
        if not flag.editable or not written_here or _indexed_array(script, flag.flag.key):
            ctx.manual(meta, *span, f"{verb} the variable it comes from: {edit.message}", anchor)
            return
        if ctx.suppressed(meta.id, span, (anchor, anchor + 1), _command_span(command)):
            ctx.skip(meta, *span)
            return
        if edit.rename:
            raw = flag.flag.word.raw
            old = flag.name if flag.name in raw else flag.name.replace("_", "-")
            new = edit.rename if old == flag.name else edit.rename.replace("_", "-")
            ctx.replace(flag.flag.key, flag.flag.index, raw.replace(old, new, 1))
        else:
            ctx.remove(flag.flag.key, flag.flag.index)
            if flag.value is not None:
                ctx.remove(flag.value.key, flag.value.index)
        if edit.prefix and TENSORBOARD_DIR not in script.text:
            ctx.rewrite(command.start, command.start, edit.prefix + " ")
        done = f"`{flag.written}` renamed --{edit.rename}" if edit.rename else f"`{flag.written}` removed"
        if edit.review:
            ctx.report(meta, *span, f"{done}: {edit.message}", REVIEW, applied=True, fix=edit.message)
            reviews.setdefault(anchor, []).append(f"`{flag.written}`: {edit.message}")
        else:
            ctx.safe(meta, *span, f"{done}: {edit.message}", after=edit.prefix or edit.rename)
