"""NM209: is_main_worker() / is_logging_process() -> rank-0 check"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Example, Rule, RuleMeta, register
from neuron_migrate.rules.optimum_names import optimum_names
from neuron_migrate.rules.optimum_training.common import DOCS_DISTRIBUTED, TRIGGERS

IS_MAIN_WORKER = frozenset(
    {
        *optimum_names("is_main_worker", "utils", "utils.misc", top_level=False),
        # data-parallel rank 0 of tensor-parallel rank 0 of the last pipeline stage: global rank 0 once
        # the model is sharded by DistributedConfig (which has no pipeline stages)
        *optimum_names("is_logging_process", "models.training.training_utils", top_level=False),
    }
)


@register
class IsMainWorker(Rule):
    """``is_main_worker()`` was "global rank 0, or no process group" (and ``is_logging_process()`` is
    that rank once DistributedConfig shards the model); the expression says so directly."""

    meta = RuleMeta(
        "NM209",
        "is_main_worker() / is_logging_process() -> rank-0 check",
        safety=SAFE,
        risks=frozenset({"collectives"}),
        summary="Becomes `not dist.is_initialized() or dist.get_rank() == 0`, parenthesized where needed.",
        docs=(DOCS_DISTRIBUTED,),
        triggers=TRIGGERS,
        example=Example(
            before=("from optimum.neuron.utils import is_main_worker\n\nif is_main_worker():\n    print(metrics)\n"),
            after=(
                "import torch.distributed as dist\n\n"
                "if not dist.is_initialized() or dist.get_rank() == 0:\n"
                "    print(metrics)\n"
            ),
        ),
    )
    calls = dict.fromkeys(IS_MAIN_WORKER, "rank_zero")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # expressions that stand alone (a whole condition, value or argument): no parentheses needed
        self.standalone: set[int] = set()

    def visit_If(self, node: cst.If) -> None:
        self.standalone.add(id(node.test))

    def visit_While(self, node: cst.While) -> None:
        self.standalone.add(id(node.test))

    def visit_Assert(self, node: cst.Assert) -> None:
        self.standalone.add(id(node.test))

    def visit_Assign(self, node: cst.Assign) -> None:
        self.standalone.add(id(node.value))

    def visit_Return(self, node: cst.Return) -> None:
        self.standalone.add(id(node.value))

    def visit_Arg(self, node: cst.Arg) -> None:
        self.standalone.add(id(node.value))

    def visit_Expr(self, node: cst.Expr) -> None:
        self.standalone.add(id(node.value))

    def rank_zero(self, original: cst.Call, updated: cst.Call, qname: str):
        if updated.args:
            return updated
        dist = self.ctx.require_import("torch.distributed", alias="dist")
        text = f"not {dist}.is_initialized() or {dist}.get_rank() == 0"
        if id(original) not in self.standalone:
            text = f"({text})"
        return self.ctx.expr(text)
