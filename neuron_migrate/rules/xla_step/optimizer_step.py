"""NM113: xm.optimizer_step(opt) -> opt.step()"""

from __future__ import annotations

import re

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import REVIEW, Edit, Example, Rule, RuleMeta, StatementReplacement, register
from neuron_migrate.rules.calls import UNKNOWN, arg_value, bind_args, is_plain_reference, literal, receiver
from neuron_migrate.rules.xla_step.common import (
    AVERAGED,
    AVERAGE_GRADIENTS,
    AVERAGE_GRADIENTS_DEF,
    DOCS_DISTRIBUTED,
    NO_PROCESS_GROUP,
    OPTIMIZER_STEP_PARAMS,
    REDUCE_GRADIENTS_PARAMS,
    data_parallel_reaches,
    fsdp_visible,
    process_group_planned,
)


@register
class OptimizerStep(Rule):
    """``xm.optimizer_step(opt)`` was ``xm.reduce_gradients(opt)`` (all-reduce of every gradient,
    scaled by 1 / world size) + ``opt.step()`` (torch_xla ``xla_model.py``). Under DDP/FSDP the
    gradients are averaged already; elsewhere the averaging is written out (Neuron distributed guide).

    Safe when DDP/FSDP wraps the model on every code path to the call: same function, earlier, not
    under a branch of its own. Otherwise one helper per file averages the gradients before the step.
    """

    meta = RuleMeta(
        "NM113",
        "xm.optimizer_step(opt) -> opt.step()",
        safety=REVIEW,
        risks=frozenset({"collectives"}),
        summary=(
            "xm.optimizer_step also averaged gradients across ranks. Where DistributedDataParallel/FSDP wraps "
            "the model on the way to the call, that averages them and the step is plain; elsewhere a helper "
            "added once per file (`_average_gradients(optimizer)`: all-reduce each gradient, divide by the world "
            "size, nothing for one rank) runs before the step. xm.reduce_gradients becomes that helper call, or "
            "goes under DDP."
        ),
        docs=(DOCS_DISTRIBUTED,),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "loss.backward()\n"
                "xm.optimizer_step(optimizer)\n"
            ),
            after=(
                "import torch.distributed as dist\n\n\n"
                + AVERAGE_GRADIENTS_DEF.format(name=AVERAGE_GRADIENTS, dist="dist")
                + "\n\n"
                "loss.backward()\n"
                f"# neuron-migrate(NM113): {AVERAGED.format(name=AVERAGE_GRADIENTS)}{NO_PROCESS_GROUP}\n"
                f"{AVERAGE_GRADIENTS}(optimizer)\n"
                "optimizer.step()\n"
            ),
        ),
    )
    calls = {
        "torch_xla.core.xla_model.optimizer_step": "optimizer_step",
        "torch_xla.core.xla_model.reduce_gradients": "reduce_gradients",
    }

    NO_WRAPPER = (
        "xm.optimizer_step also averaged gradients across ranks; wrap the model in "
        "DistributedDataParallel/FSDP (or all-reduce the grads) or ranks diverge"
    )
    FSDP_ELSEWHERE = (
        "xm.optimizer_step also averaged gradients across ranks; FSDP is used in this file but not on the way "
        "here: check this model is sharded with fully_shard (its gradients are then reduced), else wrap it in DDP"
    )
    GROUPS = (
        "xm.optimizer_step reduced gradients within replica `groups`; give DDP/FSDP the matching "
        "process group (dist.new_group) instead"
    )

    def optimizer_step(self, original: cst.Call, updated: cst.Call, qname: str):
        args = bind_args(updated, OPTIMIZER_STEP_PARAMS)
        if args is None or "optimizer" not in args:
            self.ctx.manual(
                self.meta, original, "call `optimizer.step(**optimizer_args)` and average gradients with DDP/FSDP"
            )
            return updated
        optimizer = receiver(args["optimizer"].value)
        step = self.ctx.expr(f"{optimizer}.step({self._step_arguments(args.get('optimizer_args'))})")
        if arg_value(args, "groups") is not None and "groups" in args:
            return Edit(step, review=self.GROUPS)
        if data_parallel_reaches(self.ctx, original):
            return Edit(step, safe=True)
        if fsdp_visible(self.ctx):
            return Edit(step, review=self.FSDP_ELSEWHERE)
        line = self.ctx.statement_for_call.get(id(original))
        if line is None or not is_plain_reference(args["optimizer"].value):
            return Edit(step, review=self.NO_WRAPPER)
        if self.ctx.is_suppressed(self.meta.id, original):
            return step  # left as it is by the engine; no helper for it
        review = self._schedule_helper(original)
        average = cst.parse_statement(f"{AVERAGE_GRADIENTS}({optimizer})\n")
        statement = line.with_changes(body=[line.body[0].with_changes(value=step)], leading_lines=())
        return Edit(StatementReplacement([average, statement], fallback=self.NO_WRAPPER), review=review)

    def reduce_gradients(self, original: cst.Call, updated: cst.Call, qname: str):
        args = bind_args(updated, REDUCE_GRADIENTS_PARAMS)
        understood = args is not None and "optimizer" in args and "groups" not in args
        if understood and data_parallel_reaches(self.ctx, original):
            deleted = StatementReplacement([], fallback="delete it: DDP/FSDP average the gradients during backward")
            return Edit(deleted, safe=True)
        if not understood or fsdp_visible(self.ctx) or not is_plain_reference(args["optimizer"].value):
            self.ctx.manual(
                self.meta,
                original,
                "average gradients across ranks: wrap the model in DistributedDataParallel, or all-reduce each "
                "p.grad with dist.all_reduce and divide by dist.get_world_size()",
            )
            return updated
        average = f"{AVERAGE_GRADIENTS}({receiver(args['optimizer'].value)})"
        review = "" if self.ctx.is_suppressed(self.meta.id, original) else self._schedule_helper(original)
        return Edit(self.ctx.expr(average), review=review)

    def _schedule_helper(self, original: cst.Call) -> str:
        """Define the averaging helper once, after the file's imports; returns what to say at the call."""
        dist = self.ctx.require_import("torch.distributed", alias="dist")
        helper = AVERAGE_GRADIENTS_DEF.format(name=AVERAGE_GRADIENTS, dist=dist)
        indent = self.ctx.module.default_indent
        if indent != "    ":
            helper = re.sub(r"^((?:    )+)", lambda m: indent * (len(m.group(1)) // 4), helper, flags=re.M)
        self.ctx.add_setup(
            self.meta,
            original,
            helper.rstrip("\n"),
            "",
            unless=f"def {AVERAGE_GRADIENTS}(",
            label=f"`{AVERAGE_GRADIENTS}()`",
        )
        message = AVERAGED.format(name=AVERAGE_GRADIENTS)
        return message if process_group_planned(self.ctx) else message + NO_PROCESS_GROUP

    @staticmethod
    def _step_arguments(arg: cst.Arg | None) -> str:
        if arg is None:
            return ""
        value = arg.value
        if isinstance(value, cst.Dict):
            pairs = []
            for element in value.elements:
                key = literal(element.key, single_token=True) if isinstance(element, cst.DictElement) else UNKNOWN
                if not (isinstance(key, str) and key.isidentifier()):
                    return f"**{code_of(value)}"
                pairs.append(f"{key}={code_of(element.value)}")
            return ", ".join(pairs)
        return f"**{receiver(value)}"
