"""NM105: xr.initialize_cache -> TORCH_NEURONX_NEFF_CACHE_DIR"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Edit, Example, Rule, RuleMeta, StatementReplacement, register
from neuron_migrate.rules.calls import bind_args
from neuron_migrate.rules.xla_device.common import DOCS_ENV, is_none


@register
class InitializeCacheToEnv(Rule):
    """``xr.initialize_cache(path)`` -> ``TORCH_NEURONX_NEFF_CACHE_DIR`` (DOCS_ENV, cache settings)."""

    meta = RuleMeta(
        "NM105",
        "xr.initialize_cache -> TORCH_NEURONX_NEFF_CACHE_DIR",
        safety=SAFE,
        risks=frozenset({"performance"}),
        summary="The persistent compile cache folder is set with TORCH_NEURONX_NEFF_CACHE_DIR.",
        docs=(DOCS_ENV,),
        example=Example(
            before=(
                "import torch_xla.runtime as xr\n\n"
                'xr.initialize_cache("/var/cache/neff")\n'
            ),
            after=(
                "import os\n\n"
                "# neuron-migrate(NM105): must run before anything compiles (safest: before `import torch`)\n"
                'os.environ["TORCH_NEURONX_NEFF_CACHE_DIR"] = "/var/cache/neff"\n'
            ),
        ),
    )
    calls = {"torch_xla.runtime.initialize_cache": "to_env"}

    def to_env(self, original: cst.Call, updated: cst.Call, qname: str):
        bound = bind_args(updated, ("path", "readonly"))
        line = self.ctx.statement_for_call.get(id(original))
        if bound is None or "path" not in bound or line is None or not isinstance(line.body[0], cst.Expr):
            self.ctx.manual(
                self.meta, original, 'set os.environ["TORCH_NEURONX_NEFF_CACHE_DIR"] = <path> before the first compile'
            )
            return updated
        message = "must run before anything compiles (safest: before `import torch`)"
        readonly = bound.get("readonly")
        if not is_none(readonly) and not (isinstance(readonly.value, cst.Name) and readonly.value.value == "False"):
            message += "; readonly= has no equivalent"
        os_name = self.ctx.require_import("os")
        path = self.ctx.code(bound["path"].value)
        setting = f'{os_name}.environ["TORCH_NEURONX_NEFF_CACHE_DIR"] = {path}\n'
        return Edit(StatementReplacement(self.ctx.statements(setting)), review=message)
