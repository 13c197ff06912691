"""NM423: parallel_cross_entropy -> loss_parallel()"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.calls import bind_args, receiver
from neuron_migrate.rules.neuronx_distributed.common import DOCS_TP, PLAN_SHORT, TRIGGERS, NxdRule
from neuron_migrate.rules.neuronx_trace.common import LegacyUse, one_line


# ----- NM423: parallel_cross_entropy -> loss_parallel -------------------------------------------------


@register
class ParallelCrossEntropyToLossParallel(NxdRule):
    """``parallel_cross_entropy(logits, labels)`` -> ``F.cross_entropy`` under ``loss_parallel()`` on
    vocabulary-sharded DTensor logits (DOCS_TP)."""

    meta = RuleMeta(
        "NM423",
        "parallel_cross_entropy -> loss_parallel()",
        safety=MANUAL,
        risks=frozenset({"numerics"}),
        summary=(
            "Cross-entropy on vocabulary-sharded logits is F.cross_entropy inside `with loss_parallel():`; the "
            "output layer must return a DTensor (ColwiseParallel(use_local_output=False))."
        ),
        docs=(DOCS_TP,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from neuronx_distributed.parallel_layers.loss_functions import parallel_cross_entropy\n\n"
                "loss = parallel_cross_entropy(logits, labels).mean()\n"
            ),
            after=(
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"parallel_cross_entropy in order: {PLAN_SHORT}\n"
                "from neuronx_distributed.parallel_layers.loss_functions import parallel_cross_entropy\n\n"
                "# TODO(neuron-migrate NM423): use `with loss_parallel(): loss = "
                'F.cross_entropy(logits.flatten(0, -2), labels.flatten(), reduction="none")` on DTensor logits '
                "(output layer: `ColwiseParallel(use_local_output=False)`)\n"
                "loss = parallel_cross_entropy(logits, labels).mean()\n"
            ),
        ),
    )
    apis = {"parallel_cross_entropy": "loss"}
    modules = {"loss_functions": "loss"}

    def loss(self, original, updated, use: LegacyUse, api: str):
        bound = None
        if isinstance(original, cst.Call):
            bound = bind_args(original, ("parallel_logits", "labels", "label_smoothing"))
        logits, labels = "logits", "labels"
        extra = ""
        if bound and "parallel_logits" in bound and "labels" in bound:
            logits = one_line(bound["parallel_logits"].value, 30) or logits
            labels = one_line(bound["labels"].value, 30) or labels
            logits = receiver(cst.parse_expression(logits))
            labels = receiver(cst.parse_expression(labels))
            if "label_smoothing" in bound:
                extra = f", label_smoothing={code_of(bound['label_smoothing'].value)}"
        loss = f'F.cross_entropy({logits}.flatten(0, -2), {labels}.flatten(), reduction="none"{extra})'
        self.ctx.manual(
            self.meta,
            original,
            f"use `with loss_parallel(): loss = {loss}` on DTensor logits "
            "(output layer: `ColwiseParallel(use_local_output=False)`)",
        )
        return updated
