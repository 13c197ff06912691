"""NM207: NeuronAccelerator / NeuronAcceleratorState / NeuronPartialState -> accelerate"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Example, RuleMeta, register
from neuron_migrate.rules.calls import literal
from neuron_migrate.rules.optimum_training.classes import ACCELERATOR_ONLY
from neuron_migrate.rules.optimum_training.common import DOCS_ACCELERATE, DOCS_HF, TRIGGERS
from neuron_migrate.rules.optimum_training.keyword_edits import ArgumentEdits, edited_args, rebuilt
from neuron_migrate.rules.optimum_training.stock_class import StockClassRule
from neuron_migrate.rules.rows import answer_row
from neuron_migrate.rules.tables.optimum_training import ROWS

# NeuronAccelerator's mixed_precision_config mode -> Accelerator's mixed_precision (None: nothing to set)
MIXED_PRECISION_MODES = {"AUTOCAST_BF16": '"bf16"', "NO": None}


@register
class NeuronAcceleratorToAccelerate(StockClassRule):
    """NeuronAccelerator and its state singletons -> accelerate (>= 1.13 knows the neuron device)."""

    meta = RuleMeta(
        "NM207",
        "NeuronAccelerator / NeuronAcceleratorState / NeuronPartialState -> accelerate",
        safety=SAFE,
        risks=frozenset({"numerics", "collectives"}),
        summary=(
            "Neuron-only keyword arguments are dropped: trn_config/mp_plugin (TODO: DistributedConfig at "
            "from_pretrained), zero_1 (review: FSDP), autocast_backend; mixed_precision_config "
            '"AUTOCAST_BF16" becomes mixed_precision="bf16", other modes get a review marker.'
        ),
        docs=(DOCS_ACCELERATE, DOCS_HF),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron import NeuronAccelerator\n\n"
                'accelerator = NeuronAccelerator(gradient_accumulation_steps=4, mixed_precision_config="AUTOCAST_BF16")\n'
            ),
            after=(
                "from accelerate import Accelerator\n\n"
                'accelerator = Accelerator(gradient_accumulation_steps=4, mixed_precision="bf16")\n'
            ),
        ),
    )
    follow_up_todos = True
    rows = ROWS
    row_methods = ("_reset_state",)

    def apply_row(self, original, updated, qname):
        """A call has its Neuron-only keywords edited; any other use is the row's plain rename."""
        if isinstance(original, cst.Call):
            return self.rename_call(original, updated, qname)
        return answer_row(self, original, updated, qname)

    def rename_call(self, original, updated, qname):
        target = self.twins[qname]
        edits = ArgumentEdits()
        keywords = {arg.keyword.value: arg.value for arg in updated.args if arg.keyword}
        for name, value in keywords.items():
            if name in ACCELERATOR_ONLY:
                edits.drop.add(name)
                if literal(value) is not None:
                    edits.manuals.append(f"{name} dropped: {ACCELERATOR_ONLY[name]}")
            elif name == "zero_1":
                edits.drop.add(name)
                if literal(value) is not False:
                    edits.reviews.append("zero_1 dropped: shard optimizer state with FSDP (fsdp_plugin=...)")
            elif name == "autocast_backend":
                edits.drop.add(name)
                edits.notes.append("autocast_backend dropped: Accelerator autocasts with torch.autocast")
            elif name == "mixed_precision_config":
                edits.drop.add(name)
                self.mixed_precision(value, "mixed_precision" in keywords, edits)
        func = self.ctx.expr(self.stock_name(target))
        renamed = rebuilt(updated.with_changes(func=func), edited_args(updated.args, edits))
        return self.finish(qname.rsplit(".", 1)[1], target, edits, original, renamed)

    @staticmethod
    def mixed_precision(value, has_mixed_precision: bool, edits: ArgumentEdits) -> None:
        mode = literal(value)
        mode = mode.upper() if isinstance(mode, str) else mode
        if mode in MIXED_PRECISION_MODES:
            if MIXED_PRECISION_MODES[mode] and not has_mixed_precision:
                edits.add.append(("mixed_precision", MIXED_PRECISION_MODES[mode]))
            return
        edits.reviews.append(
            'mixed_precision_config dropped: use mixed_precision="bf16" for autocast, or cast the model to '
            "bfloat16 for full-bf16 training (no stochastic rounding)"
        )
