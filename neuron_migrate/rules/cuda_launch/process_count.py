"""NM650: torchrun's process count of a GPU run -> the neuron devices"""

from __future__ import annotations

from neuron_migrate.migrate.shell import ShellScript
from neuron_migrate.rules.base import MANUAL, REVIEW, Example, RuleMeta, register
from neuron_migrate.rules.cuda_launch.common import DOCS_TORCH_NEURON, DOCS_TORCHRUN, CudaShellRule, options
from neuron_migrate.rules.launch_scripts.common import DOCS_TRN2_LAYOUT
from neuron_migrate.rules.launch_scripts.launchers import launch_of

NPROC = frozenset({"--nproc_per_node", "--nproc-per-node"})
# torchrun's "auto" counts the devices of torch.accelerator (the neuron device on Trainium, the GPUs on a GPU
# host); "gpu" asks torch.cuda and fails where there is no CUDA.
AUTO_REVIEW = (
    "--nproc_per_node gpu -> auto: torchrun starts one process per device torch.accelerator counts (the "
    "NeuronCores on Trainium, the GPUs on a GPU host)"
)
COUNT_STEP = (
    "--nproc_per_node {value} was one process per GPU: on Trainium start one per NeuronCore (64 on a "
    "trn2.48xlarge with the default LNC=2), or write --nproc_per_node=auto for one per device torch.accelerator "
    "counts, and size the batch and the parallel layout for that many ranks"
)


@register
class ProcessCount(CudaShellRule):
    """``torchrun --nproc_per_node``: ``gpu`` becomes ``auto``; a GPU count gets a TODO."""

    meta = RuleMeta(
        "NM650",
        "torchrun's GPU process count -> the neuron devices",
        safety=REVIEW,
        risks=frozenset({"launch"}),
        summary=(
            "torchrun starts one process per device. `--nproc_per_node gpu` counts CUDA devices only and becomes "
            "`auto` (the devices torch.accelerator counts); a number greater than one, or a variable, was a GPU "
            "count and gets a TODO: a Trainium host has as many processes as NeuronCores."
        ),
        docs=(DOCS_TORCHRUN, DOCS_TORCH_NEURON, DOCS_TRN2_LAYOUT),
        triggers=(b"nproc_per_node", b"nproc-per-node"),
        kind="shell",
        example=Example(
            before="torchrun --nproc_per_node=gpu train.py\n",
            after=f"# neuron-migrate(NM650): {AUTO_REVIEW}\ntorchrun --nproc_per_node=auto train.py\n",
        ),
    )

    def check(self, script: ShellScript) -> None:
        ctx, meta = self.ctx, self.meta
        for command in script.commands:
            launch = launch_of(script, command)
            if launch is None or launch.launcher != "torchrun":
                continue
            for option in options(command, NPROC):
                value = option.text
                if value in ("auto", "cpu", "1", "") or value == "neuron":
                    continue
                end = (option.name if option.inline or option.value is None else option.value).end
                span = (option.name.start, end)
                if ctx.suppressed(meta.id, span, (command.start, command.start + 1)):
                    ctx.skip(meta, *span)
                    continue
                where = option.value_span()
                if value == "gpu" and where is not None:
                    ctx.rewrite(*where, "auto")
                    ctx.review(meta, *span, AUTO_REVIEW, AUTO_REVIEW, command.start, after="auto")
                else:
                    ctx.report(
                        meta, *span, COUNT_STEP.format(value=value), MANUAL, applied=False,
                        fix=COUNT_STEP.format(value=value), marker=COUNT_STEP.format(value=value),
                        anchor=command.start,
                    )  # fmt: skip
