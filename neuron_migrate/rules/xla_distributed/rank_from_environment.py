"""NM120: rank / world-size query read from the torchrun environment"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import SAFE, Example, RuleMeta, register
from neuron_migrate.rules.calls import bind_args, literal
from neuron_migrate.rules.tables.xla_distributed import XM
from neuron_migrate.rules.xla_distributed.common import DOCS_DISTRIBUTED, RANK_QUERIES, InsideFStrings, keep_parens


@register
class RankFromEnvironment(InsideFStrings):
    """xm.get_ordinal() / xr.world_size() / ... -> the torchrun environment variable."""

    meta = RuleMeta(
        "NM120",
        "rank / world-size query read from the torchrun environment",
        safety=SAFE,
        summary=(
            "torchrun sets RANK, WORLD_SIZE and LOCAL_RANK for every process; the defaults keep a "
            "plain single-process run working without a process group."
        ),
        docs=(DOCS_DISTRIBUTED, "https://pytorch.org/docs/stable/elastic/run.html#environment-variables"),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n"
                "import torch_xla.runtime as xr\n\n"
                "rank = xm.get_ordinal()\n"
                "world_size = xr.world_size()\n"
            ),
            after=(
                "import os\n\n"
                'rank = int(os.environ.get("RANK", "0"))\n'
                'world_size = int(os.environ.get("WORLD_SIZE", "1"))\n'
            ),
        ),
    )
    calls = {name: "to_environment" for name in RANK_QUERIES}

    def to_environment(self, original: cst.Call, updated: cst.Call, qname: str):
        var = RANK_QUERIES[qname]
        default = None
        quote = self.quote(original)
        if quote is None:
            return updated
        if updated.args:
            # Only the xm queries take an argument: the value to use without replication info.
            bound = bind_args(updated, ("defval",)) if qname.startswith(XM) else None
            if bound is None:
                return updated
            value = literal(bound["defval"].value)
            default = f"{quote}{value}{quote}" if type(value) is int else code_of(bound["defval"].value)
        return keep_parens(self.ctx.expr(self.env_int(var, default, quote)), updated)
