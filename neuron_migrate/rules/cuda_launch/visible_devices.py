"""NM651: CUDA_VISIBLE_DEVICES -> NEURON_RT_VISIBLE_CORES"""

from __future__ import annotations

import re

from neuron_migrate.migrate.shell import ShellScript
from neuron_migrate.rules.base import MANUAL, REVIEW, Example, RuleMeta, register
from neuron_migrate.rules.cuda_launch.common import DOCS_RUNTIME_ENV, CudaShellRule

OLD, NEW = "CUDA_VISIBLE_DEVICES", "NEURON_RT_VISIBLE_CORES"
RENAME_REVIEW = (
    f"{OLD} -> {NEW}: the process now sees these NeuronCores where it saw these GPUs (one index or a range "
    "like 0-3); check that they match the processes the launch starts"
)
VALUE_STEP = (
    f"{OLD} -> {NEW}, whose value is one NeuronCore index or a range (0-3), not a list: write the cores this "
    "process should see"
)
READ_STEP = (
    f"reads ${OLD}, which only the GPU stack sets: on Trainium the NeuronCores a process sees are in ${NEW} "
    "(one index or a range like 0-3)"
)
_LIST = re.compile(r"\d+(?:,\d+)*")


def core_range(value: str) -> str | None:
    """A GPU id list as NEURON_RT_VISIBLE_CORES writes it: ``2`` -> ``2``, ``0,1,2,3`` -> ``0-3``; None
    when there is no such form (an id list with gaps, a variable, an empty value)."""
    if not _LIST.fullmatch(value):
        return None
    ids = [int(part) for part in value.split(",")]
    if ids != list(range(ids[0], ids[0] + len(ids))):
        return None
    return str(ids[0]) if len(ids) == 1 else f"{ids[0]}-{ids[-1]}"


@register
class VisibleDevices(CudaShellRule):
    """``CUDA_VISIBLE_DEVICES=0,1`` -> ``NEURON_RT_VISIBLE_CORES=0-1`` (settings, exports, ``env``, ``ENV``)."""

    meta = RuleMeta(
        "NM651",
        "CUDA_VISIBLE_DEVICES -> NEURON_RT_VISIBLE_CORES",
        safety=REVIEW,
        risks=frozenset({"launch"}),
        summary=(
            "The Neuron runtime picks a process's NeuronCores from NEURON_RT_VISIBLE_CORES, an index or a range "
            "(`0-3`): a contiguous GPU id list becomes that range. A list with gaps, or a value from a variable, "
            "gets a TODO; a script that reads the variable without setting it too."
        ),
        docs=(DOCS_RUNTIME_ENV,),
        triggers=(OLD.encode(),),
        kind="shell",
        example=Example(
            before=f"{OLD}=0,1,2,3 python train.py\n",
            after=f"# neuron-migrate(NM651): {RENAME_REVIEW}\n{NEW}=0-3 python train.py\n",
        ),
    )

    def check(self, script: ShellScript) -> None:
        ctx, meta = self.ctx, self.meta
        settings = [s for s in script.settings() if s.name == OLD]
        renamed = False
        for setting in settings:
            item, command = setting.item, setting.command
            span = (item.start, item.end)
            if ctx.suppressed(meta.id, span, (command.start, command.start + 1)):
                ctx.skip(meta, *span)
                continue
            ctx.rewrite(setting.name_start, setting.name_start + len(OLD), NEW)
            renamed = True
            if setting.value is None or setting.unset:
                ctx.review(meta, *span, RENAME_REVIEW, RENAME_REVIEW, command.start, after=NEW)
                continue
            raw = item.raw[len(OLD) + 1 :]
            quote = raw[:1] if raw[:1] in "'\"" and len(raw) > 1 and raw.endswith(raw[:1]) else ""
            written = raw[1:-1] if quote else raw
            cores = core_range(written) if written == setting.value else None
            if cores is not None:
                value_start = item.start + len(OLD) + 1 + len(quote)
                ctx.rewrite(value_start, value_start + len(written), cores)
                ctx.review(meta, *span, RENAME_REVIEW, RENAME_REVIEW, command.start, after=f"{NEW}={cores}")
            else:
                ctx.report(
                    meta, *span, VALUE_STEP, MANUAL, applied=True, after=NEW, fix=VALUE_STEP, marker=VALUE_STEP,
                    anchor=command.start,
                )  # fmt: skip
        for reference in script.references:
            if reference.name != OLD:
                continue
            if renamed:
                ctx.rewrite(reference.start, reference.end, NEW)
                continue
            command = next((c for c in script.commands if c.start <= reference.start < c.end), None)
            span = (reference.start - 1, reference.end)
            if command is None:
                continue
            if ctx.suppressed(meta.id, span, (command.start, command.start + 1)):
                ctx.skip(meta, *span)
            else:
                ctx.manual(meta, *span, READ_STEP, command.start)
