"""NM652: accelerate launch flags of a GPU run -> the neuron device's"""

from __future__ import annotations

from neuron_migrate.migrate.shell import ShellScript
from neuron_migrate.rules.base import MANUAL, REVIEW, Example, RuleMeta, register
from neuron_migrate.rules.cuda_launch.common import DOCS_ACCELERATE_LAUNCH, CudaShellRule, options
from neuron_migrate.rules.launch_scripts.launchers import launch_of

PRECISION = frozenset({"--mixed_precision", "--mixed-precision"})
GPU_IDS = frozenset({"--gpu_ids", "--gpu-ids"})
BF16_REVIEW = (
    "--mixed_precision fp16 -> bf16: the neuron device computes in bf16, which needs no loss scaling; check "
    "the script's own fp16 settings"
)
GPU_IDS_STEP = (
    "--gpu_ids {value}: on the neuron device accelerate passes these ids on as NEURON_RT_VISIBLE_CORES, which "
    "takes one NeuronCore index or a range (0-3): name the cores, or drop the option to use them all"
)


@register
class AccelerateFlags(CudaShellRule):
    """``accelerate launch --mixed_precision fp16`` -> ``bf16``; ``--gpu_ids`` gets a TODO. ``--multi_gpu`` stays:
    it is accelerate's multi-device launch, the neuron device's too."""

    meta = RuleMeta(
        "NM652",
        "accelerate launch GPU flags -> the neuron device's",
        safety=REVIEW,
        risks=frozenset({"launch", "numerics"}),
        summary=(
            "`--mixed_precision fp16` becomes bf16, the neuron device's precision. `--gpu_ids` gets a TODO: "
            "accelerate sets NEURON_RT_VISIBLE_CORES from it, which takes one index or a range. `--multi_gpu` "
            "is accelerate's multi-device launch on the neuron device too and stays."
        ),
        docs=(DOCS_ACCELERATE_LAUNCH,),
        triggers=(b"mixed_precision", b"mixed-precision", b"gpu_ids", b"gpu-ids"),
        kind="shell",
        example=Example(
            before="accelerate launch --multi_gpu --mixed_precision fp16 train.py\n",
            after=f"# neuron-migrate(NM652): {BF16_REVIEW}\naccelerate launch --multi_gpu --mixed_precision bf16 "
            "train.py\n",
        ),
    )

    def check(self, script: ShellScript) -> None:
        ctx, meta = self.ctx, self.meta
        for command in script.commands:
            launch = launch_of(script, command)
            if launch is None or launch.launcher != "accelerate":
                continue
            for option in options(command, PRECISION | GPU_IDS):
                end = (option.name if option.inline or option.value is None else option.value).end
                span = (option.name.start, end)
                precision = option.name.value.split("=", 1)[0] in PRECISION
                if precision and option.text != "fp16" or not precision and option.text in ("all", ""):
                    continue
                if ctx.suppressed(meta.id, span, (command.start, command.start + 1)):
                    ctx.skip(meta, *span)
                    continue
                where = option.value_span()
                if precision and where is not None:
                    ctx.rewrite(*where, "bf16")
                    ctx.review(meta, *span, BF16_REVIEW, BF16_REVIEW, command.start, after="bf16")
                elif not precision:
                    step = GPU_IDS_STEP.format(value=option.text)
                    ctx.report(meta, *span, step, MANUAL, applied=False, fix=step, marker=step, anchor=command.start)
