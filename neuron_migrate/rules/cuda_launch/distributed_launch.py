"""NM654: python -m torch.distributed.launch -> torchrun"""

from __future__ import annotations

from neuron_migrate.migrate.shell import ShellScript
from neuron_migrate.rules.base import REVIEW, Example, RuleMeta, register
from neuron_migrate.rules.cuda_launch.common import DOCS_TORCHRUN, CudaShellRule
from neuron_migrate.rules.launch_scripts.launchers import TORCHRUN_SWITCHES
from neuron_migrate.rules.pip_commands import PYTHON

MODULE = "torch.distributed.launch"
USE_ENV = frozenset({"--use_env", "--use-env"})
SWITCHES = TORCHRUN_SWITCHES | USE_ENV | {"--no_python", "--no-python"}
REVIEW_LOCAL_RANK = (
    "python -m torch.distributed.launch -> torchrun: torchrun passes no --local_rank argument; the script reads "
    "its rank from the LOCAL_RANK environment variable"
)
REVIEW_USE_ENV = "python -m torch.distributed.launch --use_env -> torchrun (which always sets LOCAL_RANK)"


@register
class DistributedLaunch(CudaShellRule):
    """The deprecated launcher module becomes ``torchrun``; ``--use_env`` goes (torchrun always sets it)."""

    meta = RuleMeta(
        "NM654",
        "python -m torch.distributed.launch -> torchrun",
        safety=REVIEW,
        risks=frozenset({"launch"}),
        summary=(
            "torch.distributed.launch is deprecated; torchrun takes the same options. It passes no `--local_rank` "
            "argument (unless the old launch had `--use_env`, the script must read LOCAL_RANK: the marker says so)."
        ),
        docs=(DOCS_TORCHRUN,),
        triggers=(MODULE.encode(),),
        kind="shell",
        example=Example(
            before=f"python -m {MODULE} --nproc_per_node=1 --use_env train.py\n",
            after=f"# neuron-migrate(NM654): {REVIEW_USE_ENV}\ntorchrun --nproc_per_node=1 train.py\n",
        ),
    )

    def check(self, script: ShellScript) -> None:
        ctx, meta = self.ctx, self.meta
        for command in script.commands:
            words = command.words
            heads = [i for i in range(len(words) - 2) if PYTHON.fullmatch(words[i].value.rsplit("/", 1)[-1])]
            first = next((i for i in heads if words[i + 1].value == "-m" and words[i + 2].value == MODULE), None)
            if first is None:
                continue
            span = (words[first].start, words[first + 2].end)
            if ctx.suppressed(meta.id, span, (command.start, command.start + 1)):
                ctx.skip(meta, *span)
                continue
            ctx.rewrite(*span, "torchrun")
            use_env = [w for w in _launcher_options(words[first + 3 :]) if w.value in USE_ENV]
            for word in use_env:
                ctx.rewrite(*_with_blank_before(script.text, word.start, word.end), "")
            review = REVIEW_USE_ENV if use_env else REVIEW_LOCAL_RANK
            ctx.review(meta, *span, review, review, command.start, after="torchrun")


def _launcher_options(words: list) -> list:
    """The words before the launched script: the launcher's options (the script may take a --use_env of
    its own)."""
    out, i = [], 0
    while i < len(words) and words[i].value.startswith("-"):
        out.append(words[i])
        takes_value = "=" not in words[i].value and words[i].value not in SWITCHES
        i += 2 if takes_value else 1
    return out


def _with_blank_before(text: str, start: int, end: int) -> tuple[int, int]:
    """The word and the blanks before it, so that removing it leaves one space between its neighbours."""
    while start > 0 and text[start - 1] in " \t":
        start -= 1
    return start, end
