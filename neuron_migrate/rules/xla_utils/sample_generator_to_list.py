"""NM170: SampleGenerator -> a list repeating the sample"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import bind_args
from neuron_migrate.rules.xla_utils.common import DOCS_XLA_UTILS, SAMPLE_GENERATOR, _operand


@register
class SampleGeneratorToList(Rule):
    """``xu.SampleGenerator(data, sample_count)`` -> ``[data] * sample_count`` (DOCS_XLA_UTILS).

    SampleGenerator yields the same ``data`` object ``sample_count`` times, has that length and can
    be iterated again: a list holding ``data`` that many times does all three."""

    meta = RuleMeta(
        "NM170",
        "SampleGenerator -> a list repeating the sample",
        safety=SAFE,
        summary="The synthetic-data generator becomes a list that holds the same sample sample_count times.",
        docs=(DOCS_XLA_UTILS,),
        example=Example(
            before=(
                "import torch\n"
                "import torch_xla.utils.utils as xu\n\n"
                "train_loader = xu.SampleGenerator(\n"
                "    data=(torch.zeros(8, 3), torch.zeros(8, dtype=torch.int64)),\n"
                "    sample_count=1000 // 8,\n"
                ")\n"
            ),
            after=(
                "import torch\n\n"
                "train_loader = [(torch.zeros(8, 3), torch.zeros(8, dtype=torch.int64))] * (1000 // 8)\n"
            ),
        ),
    )
    calls = {SAMPLE_GENERATOR: "to_list"}

    def to_list(self, original: cst.Call, updated: cst.Call, qname: str):
        bound = bind_args(updated, ("data", "sample_count"))
        if bound is None or len(bound) != 2:
            self.ctx.manual(
                self.meta, original, "replace it with `[data] * sample_count`: the same sample, that many times"
            )
            return updated
        data = bound["data"].value
        count = bound["sample_count"].value
        return self.ctx.expr(f"[{self.ctx.code(data).strip()}] * {_operand(count)}")
