"""NM510: neuron_parallel_compile wrapper removed"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from neuron_migrate.migrate.shell import WORD, Command, ShellScript
from neuron_migrate.rules.base import REVIEW, Example, RuleMeta, register
from neuron_migrate.rules.launch_scripts.common import (
    DOCS_COMPILE,
    DOCS_ENV,
    DOCS_PARALLEL_COMPILE,
    _PARALLEL_COMPILE_REVIEW,
    ShellRule,
)

if TYPE_CHECKING:
    from neuron_migrate.migrate.shell import Setting


@register
class ParallelCompileWrapper(ShellRule):
    """``neuron_parallel_compile CMD ...`` -> ``CMD ...`` (DOCS_PARALLEL_COMPILE)."""

    meta = RuleMeta(
        "NM510",
        "neuron_parallel_compile wrapper removed",
        safety=REVIEW,
        risks=frozenset({"launch", "performance"}),
        summary=(
            "There is no ahead-of-time graph extraction on TorchNeuron: the first run compiles and fills the NEFF "
            "cache, so the wrapped command runs as it is."
        ),
        docs=(DOCS_PARALLEL_COMPILE, DOCS_COMPILE, DOCS_ENV),
        triggers=(b"neuron_parallel_compile",),
        kind="shell",
        example=Example(
            before="neuron_parallel_compile torchrun --nproc_per_node=2 train.py --epochs 1\n",
            after=f"# neuron-migrate(NM510): {_PARALLEL_COMPILE_REVIEW}\ntorchrun --nproc_per_node=2 train.py --epochs 1\n",
        ),
    )

    def check(self, script: ShellScript) -> None:
        for command in script.commands:
            items = command.items
            words = [i for i, item in enumerate(items) if item.kind == WORD]
            position = self._wrapper_position(items, words)
            if position is not None:
                self._unwrap(("command", command.index), items, position, command, command.start)
        for array in script.arrays:
            if array.elements and os.path.basename(array.elements[0].value) == "neuron_parallel_compile":
                if script.array_is_indexed(array.name):
                    step = (
                        f"remove neuron_parallel_compile from {array.name} and fix the positions the script reads it by"
                    )
                    self.ctx.manual(self.meta, array.elements[0].start, array.elements[0].end, step, array.start)
                    continue
                self._unwrap(("array", array.index), array.elements, 0, None, array.start)
        for setting in script.settings():
            if (setting.value or "").strip("\"'") == "neuron_parallel_compile":
                self._empty(setting)

    def _empty(self, setting: Setting) -> None:
        """``MAYBE_COMPILE="neuron_parallel_compile"`` (then ``$MAYBE_COMPILE torchrun ...``): the
        variable that held the wrapper is emptied, so the command it prefixed runs as it is."""
        ctx, meta, item = self.ctx, self.meta, setting.item
        span = (item.start, item.end)
        if ctx.suppressed(meta.id, span, (setting.command.start, setting.command.start + 1)):
            ctx.skip(meta, *span)
            return
        ctx.rewrite(item.start + len(item.raw) - len(item.raw.partition("=")[2]), item.end, '""')
        message = f"{setting.name} no longer holds neuron_parallel_compile: the command it prefixed runs as it is"
        ctx.review(meta, *span, message, _PARALLEL_COMPILE_REVIEW, setting.command.start, after=f'{setting.name}=""')

    @staticmethod
    def _wrapper_position(items, words: list[int]) -> int | None:
        for i in words:
            name = os.path.basename(items[i].value)
            if name == "neuron_parallel_compile":
                return i
            if name not in ("env", "exec", "nohup") and not re.match(r"[A-Za-z_]\w*=|-", items[i].value):
                return None
        return None

    def _unwrap(self, key, items, position: int, command: Command | None, anchor: int) -> None:
        ctx, meta = self.ctx, self.meta
        wrapper = items[position]
        rest = [item for item in items[position + 1 :] if item.kind == WORD]
        span = (wrapper.start, (command.end if command else wrapper.end))
        if ctx.suppressed(meta.id, span, (anchor, anchor + 1)):
            ctx.skip(meta, *span)
            return
        if not rest:
            ctx.manual(meta, *span, "neuron_parallel_compile with no command: delete this line", anchor)
            return
        ctx.remove(key, position)
        ctx.review(
            meta, *span, "neuron_parallel_compile removed: the command runs as it is", _PARALLEL_COMPILE_REVIEW, anchor
        )
