"""NM122: xm.master_print() -> print() on rank 0"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Example, RuleMeta, register
from neuron_migrate.rules.calls import literal
from neuron_migrate.rules.tables.xla_distributed import XM
from neuron_migrate.rules.xla_distributed.common import DOCS_DISTRIBUTED, LEGACY_ARGUMENTS, DistributedRule


# ----- NM122: master_print -----------------------------------------------------------------------------
@register
class MasterPrintToGuardedPrint(DistributedRule):
    """xm.master_print(*args, fd=, local=, flush=) -> print(...) under a rank-0 guard."""

    meta = RuleMeta(
        "NM122",
        "xm.master_print() -> print() on rank 0",
        safety=SAFE,
        summary="master_print printed on global rank 0 (local=False, the default) or on each host's rank 0.",
        docs=(DOCS_DISTRIBUTED,),
        example=Example(
            before=(
                "import sys\n\n"
                "import torch_xla.core.xla_model as xm\n\n"
                'xm.master_print(f"epoch {epoch} loss {loss:.4f}", fd=sys.stderr)\n'
            ),
            after=(
                "import sys\n"
                "import os\n\n"
                'if int(os.environ.get("RANK", "0")) == 0:\n'
                '    print(f"epoch {epoch} loss {loss:.4f}", file=sys.stderr)\n'
            ),
        ),
    )
    calls = {f"{XM}.master_print": "to_print"}

    def to_print(self, original: cst.Call, updated: cst.Call, qname: str):
        fallback = 'wrap a `print(...)` in `if int(os.environ.get("RANK", "0")) == 0:`'
        if self.shape(original) != ("bare", None):
            return self.manual(original, updated, f"not a statement of its own; {fallback}")
        if self.keeps_legacy_arguments(original, updated):
            return self.manual(original, updated, LEGACY_ARGUMENTS)
        var = "RANK"
        args = []
        for arg in updated.args:
            keyword = arg.keyword.value if arg.keyword else None
            if arg.star == "**" or keyword not in (None, "fd", "flush", "local"):
                return self.manual(original, updated, f"arguments not understood; {fallback}")
            if keyword == "local":
                local = literal(arg.value)
                if type(local) is not bool:
                    return self.manual(original, updated, f"computed `local=`; {fallback} (LOCAL_RANK when local)")
                var = "LOCAL_RANK" if local else "RANK"
                continue
            if keyword == "fd":
                arg = arg.with_changes(keyword=cst.Name("file"))
            args.append(arg)
        if args and len(args) != len(updated.args):
            args[-1] = args[-1].with_changes(comma=updated.args[-1].comma)
        call = updated.with_changes(func=cst.Name("print"), args=args)
        return self.replace_with(original, [f"if {self.env_int(var)} == 0:", f"\t{self.code_at(call, 1)}"])
