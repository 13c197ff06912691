"""NM136: XLA FSDP needs a port to FSDP2 (fully_shard)"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import ScopeProvider

from neuron_migrate.migrate.context import code_of
from neuron_migrate.migrate.walk import walk
from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.rows import answer_row
from neuron_migrate.rules.tables.xla_distributed import FSDP_MODULES, FSDP_V2, ROWS
from neuron_migrate.rules.xla_distributed.common import (
    DOCS_DCP,
    DOCS_DISTRIBUTED,
    DOCS_FSDP2,
    DOCS_TUTORIAL,
    DistributedRule,
)

XLA_FSDP = {f"{module}.XlaFullyShardedDataParallel" for module in FSDP_MODULES}
# XLA FSDP options FSDP2 spells its own way; the rest are XLA-only and go.
KEPT_OPTIONS = ("reshard_after_forward",)
PRECISION_OPTIONS = ("compute_dtype", "fp32_reduce_scatter")
WRAPPING_OPTIONS = ("auto_wrap_policy", "auto_wrapper_callable", "mesh")


# ----- NM136: XLA FSDP --------------------------------------------------------------------------------------------


@register
class XlaFsdpManual(DistributedRule):
    """torch_xla's XlaFullyShardedDataParallel, SPMD's FSDPv2 and checkpoint consolidation -> FSDP2, by hand.

    The marker of a wrapping call spells out the FSDP2 calls for that call: the blocks its
    ``transformer_auto_wrap_policy`` names, its precision as a MixedPrecisionPolicy, and the XLA-only
    options that go."""

    meta = RuleMeta(
        "NM136",
        "XLA FSDP needs a port to FSDP2 (fully_shard)",
        safety=MANUAL,
        risks=frozenset({"collectives", "checkpoint-format"}),
        summary=(
            "Wrapping policy, optimizer construction order and sharded checkpoints differ; FSDP2 "
            "`fully_shard` on a neuron DeviceMesh is the supported replacement."
        ),
        docs=(DOCS_DISTRIBUTED, DOCS_TUTORIAL, DOCS_FSDP2, DOCS_DCP),
        example=Example(
            before=(
                "from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP\n\n"
                "model = FSDP(model)\n"
            ),
            after=(
                "from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP\n\n"
                "# TODO(neuron-migrate NM136): shard with FSDP2 on `mesh = init_device_mesh(\"neuron\", "
                "(world_size,))`: `fully_shard(model, mesh=mesh)`; it shards in place and returns the same module "
                "(no `.module`, no XLA FSDP methods); create the optimizer after sharding\n"
                "model = FSDP(model)\n"
            ),
        ),
    )
    rows = ROWS

    def apply_row(self, original, updated, qname: str):
        if isinstance(original, cst.Call) and (qname in XLA_FSDP or qname == FSDP_V2):
            step = self._fully_shard_step(original, spmd=qname == FSDP_V2)
            if step is not None:
                self.ctx.manual(self.meta, original, step)
                return updated
        return answer_row(self, original, updated, qname)

    def _fully_shard_step(self, call: cst.Call, spmd: bool) -> str | None:
        """The FSDP2 calls that replace this wrapping call, when its arguments can be read."""
        if not call.args or call.args[0].keyword is not None or call.args[0].star:
            return None
        module = code_of(call.args[0].value)
        options = {arg.keyword.value: arg.value for arg in call.args[1:] if arg.keyword is not None}
        if len(options) != len(call.args) - 1:
            return None  # more positional arguments, or **kwargs: the generic step
        blocks = self._wrapped_blocks(options.get("auto_wrap_policy"))
        steps = ['shard with FSDP2 on `mesh = init_device_mesh("neuron", (world_size,))`:']
        root = f"`fully_shard({module}, mesh=mesh{self._fully_shard_options(options)})`;"
        if blocks:
            classes = blocks[0] if len(blocks) == 1 else f"({', '.join(blocks)})"
            steps.append(f"`for m in {module}.modules(): if isinstance(m, {classes}): fully_shard(m, mesh=mesh)`,")
            steps.append(f"then {root}")
        elif "auto_wrap_policy" in options:
            steps.append(f"`fully_shard(block, mesh=mesh)` on each block its auto_wrap_policy chose, then {root}")
        else:
            steps.append(root)
        steps.append(
            "it shards in place and returns the same module (no `.module`, no XLA FSDP methods); "
            "create the optimizer after sharding"
        )
        if "auto_wrapper_callable" in options:
            steps.append(
                "; checkpoint activations with `checkpoint_wrapper(block)` "
                "(torch.distributed.algorithms._checkpoint.checkpoint_wrapper) before sharding the block"
            )
        dropped = sorted(set(options) - {*KEPT_OPTIONS, *PRECISION_OPTIONS, *WRAPPING_OPTIONS})
        if dropped:
            steps.append(f"; XLA-only options go: {', '.join(dropped)}")
        if spmd:
            steps.append(
                "; each torchrun rank then loads its own slice of the batch (the SPMD batch covered every core)"
            )
        return " ".join(steps).replace(" ;", ";")

    @staticmethod
    def _fully_shard_options(options: dict[str, cst.BaseExpression]) -> str:
        precision = []
        if "compute_dtype" in options:
            precision.append(f"param_dtype={code_of(options['compute_dtype'])}")
        if "fp32_reduce_scatter" in options and code_of(options["fp32_reduce_scatter"]) == "True":
            precision.append("reduce_dtype=torch.float32")
        text = f", mp_policy=MixedPrecisionPolicy({', '.join(precision)})" if precision else ""
        for name in KEPT_OPTIONS:
            if name in options:
                text += f", {name}={code_of(options[name])}"
        return text

    def _wrapped_blocks(self, policy: cst.BaseExpression | None) -> list[str]:
        """The classes of ``functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={...})``,
        given here or assigned once to the name given here."""
        policy = self._value_of(policy)
        if not isinstance(policy, cst.Call) or not code_of(policy.func).endswith("partial") or not policy.args:
            return []
        wrapped = policy.args[0].value
        if not any(q.endswith(".transformer_auto_wrap_policy") for q in self.ctx.qualified_names(wrapped)):
            return []
        for arg in policy.args[1:]:
            if arg.keyword is not None and arg.keyword.value == "transformer_layer_cls":
                classes = arg.value
                if isinstance(classes, (cst.Set, cst.List, cst.Tuple)):
                    return [code_of(element.value) for element in classes.elements]
        return []

    def _value_of(self, node: cst.BaseExpression | None) -> cst.BaseExpression | None:
        if not isinstance(node, cst.Name):
            return node
        scope = self.ctx.wrapper.resolve(ScopeProvider).get(node)
        assignments = list(scope[node.value]) if scope is not None else []
        if len(assignments) != 1:
            return None
        values = _AssignedValues(assignments[0].node)
        walk(self.ctx.module, values)
        return values.value


class _AssignedValues(cst.CSTVisitor):
    """The value assigned to one Name target (``name = value``)."""

    def __init__(self, target: cst.CSTNode) -> None:
        super().__init__()
        self.target = target
        self.value: cst.BaseExpression | None = None

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and node.targets[0].target is self.target:
            self.value = node.value
