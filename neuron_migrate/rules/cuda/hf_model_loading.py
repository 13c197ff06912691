"""NM631: Hugging Face model loading for a GPU -> the accelerator (device_map, attention)"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import REVIEW, Edit, Example, RuleMeta, register
from neuron_migrate.rules.calls import with_args
from neuron_migrate.rules.cuda.common import (
    DOCS_DISTRIBUTED_CONFIG,
    DOCS_HF_ATTENTION,
    DOCS_HF_DEVICE_MAP,
    CudaRule,
    accelerator,
    cuda_string,
    is_true,
    keyword,
    string_expression,
    string_value,
)

DEVICE_MAP = "device_map"
# accelerate's planned placements: spread over every GPU, then the CPU and the disk
PLANNED = frozenset({"auto", "balanced", "balanced_low_0", "sequential"})
AUTO_REVIEW = (
    'device_map="auto" planned the model over every GPU (then CPU and disk); it now loads whole onto the '
    "current accelerator device (the neuron device on Trainium, where accelerate's plan is not documented): "
    "under torchrun set the device first (torch.accelerator.set_device_index(local_rank)); a model larger than "
    "one device needs distributed_config=DistributedConfig(tp_size=N)"
)
FLASH_ATTENTION = frozenset({"flash_attention_2", "flash_attention_3"})
SDPA_REVIEW = (
    'flash-attention is a CUDA kernel: attn_implementation="sdpa" (PyTorch\'s scaled_dot_product_attention) runs '
    'on the neuron device; a Hub kernel with a neuron build (kernels, use_kernels=True) is the faster route'
)


@register
class HfModelLoading(CudaRule):
    """Hugging Face loading written for a GPU (checked against transformers 5.24 and accelerate 1.16).

    ``device_map="cuda"`` / ``"cuda:N"`` -> the accelerator's name, as a device string elsewhere (NM602):
    transformers maps ``"cuda"`` to ``LOCAL_RANK`` on a GPU and takes ``"neuron"`` on Trainium.
    ``device_map="auto"`` (and accelerate's other plans) -> ``torch.accelerator.current_accelerator()``: the
    model loads whole onto the current device. On Trainium accelerate plans "auto" through the neuron module's
    memory query, which is not documented to answer, and TorchNeuron's own recipe places a model with
    ``device_map="neuron"`` (one device) or shards it with ``DistributedConfig``; under torchrun each rank sets
    its device first, since ``"neuron"`` is not mapped to ``LOCAL_RANK``. The review says so.
    ``device_map={"": local_rank}`` stays: an integer names a device of the accelerator (torch 2.13), the neuron
    device on Trainium. The same for a ``device_map = "auto"`` variable.

    ``attn_implementation="flash_attention_2"`` (or ``_3``) and the old ``use_flash_attention_2=True`` ->
    ``attn_implementation="sdpa"``, which runs everywhere; a Hub kernel is named in the review rather than
    chosen, since which flash-attention kernels of the Hub have a neuron build is not documented."""

    meta = RuleMeta(
        "NM631",
        "Hugging Face model loading for a GPU -> the accelerator",
        safety=REVIEW,
        risks=frozenset({"performance"}),
        summary=(
            'device_map="cuda" / "auto" load onto the accelerator; flash-attention becomes attn_implementation='
            '"sdpa".'
        ),
        docs=(DOCS_HF_DEVICE_MAP, DOCS_HF_ATTENTION, DOCS_DISTRIBUTED_CONFIG),
        triggers=(b"device_map", b"flash_attention"),
        example=Example(
            before=(
                "from transformers import AutoModelForCausalLM\n\n"
                'model = AutoModelForCausalLM.from_pretrained("gpt2", device_map="cuda", '
                'attn_implementation="flash_attention_2")\n'
            ),
            after=(
                "from transformers import AutoModelForCausalLM\n"
                "import torch\n\n"
                f"# neuron-migrate(NM631): {SDPA_REVIEW}\n"
                'model = AutoModelForCausalLM.from_pretrained("gpt2", device_map=str(torch.accelerator.'
                'current_accelerator()), attn_implementation="sdpa")\n'
            ),
        ),
    )

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        reviews: list[str] = []
        args = list(updated.args)
        device_map = keyword(updated, DEVICE_MAP)
        if device_map is not None:
            new = self._device_map(device_map.value, reviews)
            if new is not None:
                args = [a.with_changes(value=new) if a is device_map else a for a in args]
        attention = keyword(updated, "attn_implementation")
        if attention is not None and string_value(attention.value) in FLASH_ATTENTION:
            args = [a.with_changes(value=cst.SimpleString('"sdpa"')) if a is attention else a for a in args]
            reviews.append(SDPA_REVIEW)
        flag = keyword(updated, "use_flash_attention_2")
        if flag is not None and is_true(flag.value):
            sdpa = flag.with_changes(keyword=cst.Name("attn_implementation"), value=cst.SimpleString('"sdpa"'))
            args = [sdpa if a is flag else a for a in args] if attention is None else [a for a in args if a is not flag]
            reviews.append(SDPA_REVIEW)
        if args == list(updated.args):
            return updated
        call = with_args(updated, args) if len(args) != len(updated.args) else updated.with_changes(args=args)
        return Edit(call, review="; ".join(reviews), safe=not reviews)

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign):
        """``device_map = "auto"``, the value a loading call is passed later."""
        if not any(isinstance(t.target, cst.Name) and t.target.value == DEVICE_MAP for t in updated.targets):
            return updated
        reviews: list[str] = []
        new = self._device_map(updated.value, reviews)
        if new is None:
            return updated
        return Edit(updated.with_changes(value=new), review="; ".join(reviews), safe=not reviews)

    def _device_map(self, value: cst.BaseExpression, reviews: list[str]) -> cst.BaseExpression | None:
        match = cuda_string(value)
        if match is not None:
            return self.ctx.expr(string_expression(self.ctx, match))
        if string_value(value) in PLANNED:
            reviews.append(AUTO_REVIEW)
            return self.ctx.expr(accelerator(self.ctx))
        if isinstance(value, cst.IfExp):
            body, orelse = self._device_map(value.body, reviews), self._device_map(value.orelse, reviews)
            if body is None and orelse is None:
                return None
            return value.with_changes(body=body or value.body, orelse=orelse or value.orelse)
        return None
