"""NM511: HF_DEACTIVATE_ASYNC_LOAD=1 set for Hugging Face launches"""

from __future__ import annotations

from neuron_migrate.migrate.shell import Command, ShellScript
from neuron_migrate.rules.base import SAFE, Example, RuleMeta, register
from neuron_migrate.rules.launch_scripts.common import ASYNC_LOAD, DOCS_HF, _ASYNC_LOAD_WHY, ShellRule, _command_span
from neuron_migrate.rules.launch_scripts.launchers import is_hf_job, launch_of


@register
class AsyncLoadOff(ShellRule):
    """``export HF_DEACTIVATE_ASYNC_LOAD=1`` before a Hugging Face launch (as NM217 does in Python)."""

    meta = RuleMeta(
        "NM511",
        "HF_DEACTIVATE_ASYNC_LOAD=1 set for Hugging Face launches",
        safety=SAFE,
        risks=frozenset({"launch"}),
        summary=(
            "A torchrun / python / accelerate launch of a transformers, TRL or optimum script (or one with Trainer "
            "flags) gets HF_DEACTIVATE_ASYNC_LOAD=1, unless the script already sets it."
        ),
        docs=(DOCS_HF,),
        # `python` too: a plain `python train.py` launch of a Hugging Face script is one (the words of a shell
        # rule are looked for in shell text only, so Python files that say "python" are not parsed for it).
        triggers=(b"torchrun", b"accelerate launch", b"python", b"--output_dir", b"--per_device_train_batch_size"),
        kind="shell",
        example=Example(
            before=(
                "#!/usr/bin/env bash\n"
                "set -euo pipefail\n"
                "torchrun --nproc_per_node=32 train.py --output_dir out --per_device_train_batch_size 1\n"
            ),
            after=(
                "#!/usr/bin/env bash\n"
                "set -euo pipefail\n"
                f"export {ASYNC_LOAD}=1\n"
                "torchrun --nproc_per_node=32 train.py --output_dir out --per_device_train_batch_size 1\n"
            ),
        ),
    )

    def check(self, script: ShellScript) -> None:
        if ASYNC_LOAD in script.text:
            return
        ctx, meta = self.ctx, self.meta
        for command in script.commands:
            launch = launch_of(script, command)
            if launch is None or not is_hf_job(script, launch):
                continue
            span = _command_span(command)
            if ctx.suppressed(meta.id, span):
                ctx.skip(meta, *span)
                continue
            ctx.insert_line(self._position(script, command), f"export {ASYNC_LOAD}=1")
            ctx.safe(
                meta, *span, f"added `export {ASYNC_LOAD}=1` before the first Hugging Face launch: {_ASYNC_LOAD_WHY}",
                after=f"export {ASYNC_LOAD}=1",
            )  # fmt: skip
            return

    @staticmethod
    def _position(script: ShellScript, command: Command) -> int:
        """Next to the script's other top-level exports before the launch, else right above the
        outermost block holding the launch (so every branch of the script sees it)."""
        anchor = script.top_level_start(command.start)
        exports = [
            c
            for c in script.commands
            if c.end <= anchor and c.words and c.words[0].value == "export" and script.group_depth(c.start)[1] == 0
        ]
        if not exports:
            return anchor
        group_start, _ = script.group_depth(exports[-1].start)
        groups = script.layout.groups
        return next(end for start, end in groups if start == group_start)
