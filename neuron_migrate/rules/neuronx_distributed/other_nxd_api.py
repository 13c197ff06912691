"""NM449: other neuronx_distributed API"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.neuronx_distributed.common import (
    DOCS_DISTRIBUTED,
    DOCS_TRANSITION,
    NXD,
    PLAN_SHORT,
    TRIGGERS,
    AdviceRule,
)
from neuron_migrate.rules.neuronx_trace.common import LegacyUse


# ----- NM449: any other NxD name ----------------------------------------------------------------------


@register
class OtherNxdApi(AdviceRule):
    """Every other neuronx_distributed name: a short table of known ones, and for the rest a marker naming
    the module, so no NxD use is left without a next step (DOCS_TRANSITION, DOCS_DISTRIBUTED)."""

    answers_the_rest = "generic"
    meta = RuleMeta(
        "NM449",
        "other neuronx_distributed API",
        safety=MANUAL,
        risks=frozenset({"collectives"}),
        summary="Other NxD APIs have no drop-in replacement; rebuild them with stock torch.distributed.",
        docs=(DOCS_TRANSITION, DOCS_DISTRIBUTED),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from neuronx_distributed.parallel_layers.grads import clip_grad_norm\n\n"
                "clip_grad_norm(model.parameters(), 1.0)\n"
            ),
            after=(
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"clip_grad_norm in order: {PLAN_SHORT}\n"
                "from neuronx_distributed.parallel_layers.grads import clip_grad_norm\n\n"
                "# TODO(neuron-migrate NM449): use `torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)`: it "
                "handles DTensor and FSDP2 parameters\n"
                "clip_grad_norm(model.parameters(), 1.0)\n"
            ),
        ),
    )
    apis = {
        "clip_grad_norm": "advise",
        "model_parallel_xla_manual_seed": "advise",
        "apply_activation_checkpointing": "advise",
        "divide": "advise",
        "hardware": "advise",
        "NeuronTensorBoardLogger": "advise",
        "load_balancing_loss_func": "advise",
    }
    modules = {"kernels": "advise", "lightning": "advise"}
    advice = {
        "divide": "use `a // b` (NxD's divide also asserted that b divides a evenly)",
        "hardware": (
            "NxD's hardware enum has no counterpart: compare the platform string (trn1, trn2) where the code "
            "branches on it"
        ),
        "NeuronTensorBoardLogger": "use Lightning's own `TensorBoardLogger(save_dir=...)`",
        "lightning": (
            "neuronx_distributed.lightning adapted PyTorch Lightning to XLA: rebuild its strategy on torch.distributed "
            'with device "neuron", or use a plain training loop'
        ),
        "load_balancing_loss_func": (
            "compute the router's load-balancing loss in plain PyTorch (transformers' Mixtral "
            "`load_balancing_loss_func` is one)"
        ),
        "kernels": (
            'register the NKI kernel as an op with `@torch_neuronx.nki_op("ns::name", mutates_args=())`; '
            "for attention, `F.scaled_dot_product_attention` may do"
        ),
        "clip_grad_norm": (
            "use `torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)`: "
            "it handles DTensor and FSDP2 parameters"
        ),
        "model_parallel_xla_manual_seed": "use `torch.manual_seed(seed)` with the same seed on every rank",
        "apply_activation_checkpointing": (
            "use `apply_activation_checkpointing(model, check_fn=...)` from "
            "torch.distributed.algorithms._checkpoint.checkpoint_wrapper, or `torch.utils.checkpoint.checkpoint`"
        ),
    }

    def generic(self, original, updated, use: LegacyUse, api: str):
        module, _, name = use.qname.rpartition(".")
        self.ctx.manual(
            self.meta,
            original,
            f"`{name}` from {module or NXD} has no drop-in replacement: rebuild it with stock PyTorch "
            "(DeviceMesh, DTensor, FSDP2) following the NM420 plan",
        )
        return updated
