"""NM513: torch_compile flags added to migrated Hugging Face launches"""

from __future__ import annotations

from neuron_migrate.migrate.shell import ShellScript
from neuron_migrate.rules.base import REVIEW, Example, RuleMeta, register
from neuron_migrate.rules.launch_scripts.common import (
    COMPILE_FLAGS,
    DOCS_COMPILE,
    DOCS_TRAINING_ARGS,
    _COMPILE_REVIEW,
    ShellRule,
    _anchor,
    _command_span,
)
from neuron_migrate.rules.launch_scripts.launchers import flag_name, launch_of
from neuron_migrate.rules.launch_scripts.neuron_only_training_flags import NeuronOnlyTrainingFlags
from neuron_migrate.rules.launch_scripts.training_flags import neuron_flags


@register
class TorchCompileFlags(ShellRule):
    """A launch that lost its Neuron-only flags gets ``--torch_compile true --torch_compile_backend neuron``
    in their place (DOCS_COMPILE)."""

    meta = RuleMeta(
        "NM513",
        "torch_compile flags added to migrated Hugging Face launches",
        safety=REVIEW,
        risks=frozenset({"performance"}),
        summary=(
            "Where NM512 removed Neuron-only flags and the launch has no --torch_compile, Trainer is told to "
            "compile with the neuron backend, as NeuronTrainer did."
        ),
        docs=(DOCS_COMPILE, DOCS_TRAINING_ARGS),
        triggers=NeuronOnlyTrainingFlags.meta.triggers,
        kind="shell",
        example=Example(
            before=(
                "export HF_DEACTIVATE_ASYNC_LOAD=1\n"
                "torchrun --nproc_per_node=2 train.py --output_dir out --use_autocast\n"
            ),
            after=(
                "export HF_DEACTIVATE_ASYNC_LOAD=1\n"
                f"# neuron-migrate(NM513): {_COMPILE_REVIEW}\n"
                f"torchrun --nproc_per_node=2 train.py --output_dir out {COMPILE_FLAGS}\n"
            ),
        ),
    )

    def check(self, script: ShellScript) -> None:
        ctx, meta = self.ctx, self.meta
        for command in script.commands:
            launch = launch_of(script, command)
            if launch is None:
                continue
            flags = [f for f in neuron_flags(script, launch) if f.editable]
            if any(ctx.replaced(f.flag.key, f.flag.index) for f in flags):
                continue
            removed = [f for f in flags if ctx.removed(f.flag.key, f.flag.index)]
            if not removed or any((flag_name(a.value) or "").startswith("torch_compile") for a in launch.args):
                continue
            host = removed[0]
            anchor = _anchor(script, host.flag.key, command)
            span = (host.flag.word.start, host.flag.word.end)
            if ctx.suppressed(meta.id, span, (anchor, anchor + 1), _command_span(command)):
                ctx.skip(meta, *span)
                continue
            ctx.replace(host.flag.key, host.flag.index, COMPILE_FLAGS)
            ctx.review(meta, *span, f"`{COMPILE_FLAGS}` added", _COMPILE_REVIEW, anchor, after=COMPILE_FLAGS)
