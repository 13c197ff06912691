"""NM121: xm.is_master_ordinal() read from the torchrun environment"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Example, RuleMeta, register
from neuron_migrate.rules.calls import UNKNOWN, ComparisonRule, arg_value, bind_args
from neuron_migrate.rules.tables.xla_distributed import XM
from neuron_migrate.rules.xla_distributed.common import DOCS_DISTRIBUTED, InsideFStrings, keep_parens


# ----- NM121: master ordinal -------------------------------------------------------------------------
@register
class MasterOrdinalFromEnvironment(ComparisonRule, InsideFStrings):
    """xm.is_master_ordinal(local=True) -> LOCAL_RANK == 0; local=False -> RANK == 0."""

    meta = RuleMeta(
        "NM121",
        "xm.is_master_ordinal() read from the torchrun environment",
        safety=SAFE,
        summary="local=True (the default) meant rank 0 of each host: LOCAL_RANK; local=False meant global RANK 0.",
        docs=(DOCS_DISTRIBUTED,),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "if xm.is_master_ordinal():\n"
                "    writer = make_writer()\n"
                "is_global_master = xm.is_master_ordinal(local=False)\n"
            ),
            after=(
                "import os\n\n"
                'if int(os.environ.get("LOCAL_RANK", "0")) == 0:\n'
                "    writer = make_writer()\n"
                'is_global_master = int(os.environ.get("RANK", "0")) == 0\n'
            ),
        ),
    )
    calls = {f"{XM}.is_master_ordinal": "to_comparison"}

    def to_comparison(self, original: cst.Call, updated: cst.Call, qname: str):
        bound = bind_args(updated, ("local",))
        local = UNKNOWN if bound is None else arg_value(bound, "local", True)
        if type(local) is not bool:
            return self.manual(
                original,
                updated,
                'computed `local=`: write `int(os.environ.get("LOCAL_RANK" if local else "RANK", "0")) == 0`',
            )
        quote = self.quote(original)
        if quote is None:
            return updated
        comparison = self.ctx.expr(f"{self.env_int('LOCAL_RANK' if local else 'RANK', quote=quote)} == 0")
        if updated.lpar:
            return keep_parens(comparison, updated)
        if self.needs_parentheses(original):
            return comparison.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return comparison
