"""NM308: tokenizer outputs moved to the migrated model's device"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import SAFE, Edit, Example, Fact, RuleMeta, register
from neuron_migrate.rules.optimum_inference.common import DOCS_HF_INFERENCE, OPTIMUM_TRIGGERS
from neuron_migrate.rules.optimum_inference.loader_index import LOADER_INDEX, LOADER_REGISTRY, LoaderIndex
from neuron_migrate.rules.optimum_inference.loader_rule import NeuronLoaderRule
from neuron_migrate.rules.optimum_inference.model_loading import TransformersModelRule
from neuron_migrate.rules.optimum_inference.reading import returns_tensors

# Keyword arguments of a forward / generate call that carry the tokenizer's tensors.
TENSOR_KEYWORDS = frozenset(
    {"input_ids", "attention_mask", "token_type_ids", "position_ids", "pixel_values", "input_features", "inputs"}
)


@register
class InputsToModelDevice(NeuronLoaderRule):
    """The tokenizer's tensors follow the model to its device. optimum-neuron's compiled models took
    CPU tensors and copied them in; a stock model on ``device_map="neuron"`` needs its inputs on the
    same device (``BatchEncoding.to`` / ``Tensor.to``), or the first forward fails with a device mismatch.
    Pipelines move their inputs themselves and are left alone."""

    meta = RuleMeta(
        "NM308",
        "tokenizer outputs moved to the migrated model's device",
        safety=SAFE,
        summary=(
            'Where a model loaded from optimum-neuron now loads on "neuron", the return_tensors="pt" results '
            "passed to its generate() or forward (`**inputs`, `input_ids=...`) get `.to(model.device)`."
        ),
        docs=(DOCS_HF_INFERENCE,),
        triggers=OPTIMUM_TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron import NeuronModelForSequenceClassification\n\n"
                "model = NeuronModelForSequenceClassification.from_pretrained(model_id)\n"
                'inputs = tokenizer("hello", return_tensors="pt")\n'
                "logits = model(**inputs).logits\n"
            ),
            after=(
                "from transformers import AutoModelForSequenceClassification\n\n"
                "# neuron-migrate(NM301): this must be the original checkpoint: a Neuron-compiled one (*.neuron "
                "files) cannot be loaded\n"
                'model = AutoModelForSequenceClassification.from_pretrained(model_id, device_map="neuron")\n'
                'inputs = tokenizer("hello", return_tensors="pt")\n'
                "logits = model(**inputs.to(model.device)).logits\n"
            ),
        ),
    )

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        if not self.ctx.fact(LOADER_REGISTRY):
            return updated
        found = self.ctx.fact(INPUTS_PLAN).get(id(original))
        if found is None:
            return updated
        receiver, positions = found
        device = cst.parse_expression(f"{receiver}.device")
        args = list(updated.args)
        for position in positions:
            moved = cst.Call(func=cst.Attribute(value=args[position].value, attr=cst.Name("to")), args=[cst.Arg(device)])
            args[position] = args[position].with_changes(value=moved)
        moved_to = f"the tokenizer's tensors move to {receiver}.device: the model now runs on the neuron device"
        return Edit(updated.with_changes(args=args), message=moved_to, safe=True)

    @staticmethod
    def plan(ctx) -> dict[int, tuple[str, list[int]]]:
        """id(generate / forward call of a migrated model) -> (the model's code, arguments to move)."""
        index = ctx.fact(LOADER_INDEX)
        models = [l for l in index.loads.values() if l.migrates and isinstance(l.rule, TransformersModelRule)]
        if not models:
            return {}
        targets = {load.target for load in models if load.target}
        out = {}
        for call in index.scan.calls:
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "generate":
                receiver = code_of(func.value)  # generate() is a model's, wherever it came from
            elif isinstance(func, (cst.Name, cst.Attribute)) and code_of(func) in targets:
                receiver = code_of(func)
            else:
                continue
            positions = [n for n, arg in enumerate(call.args) if _carries_cpu_tensors(index, arg, n)]
            if positions:
                out[id(call)] = (receiver, positions)
        return out


def _carries_cpu_tensors(index: LoaderIndex, arg: cst.Arg, position: int) -> bool:
    """``**inputs``, ``input_ids=inputs["input_ids"]`` or a first positional made of the tokenizer's tensors."""
    if arg.star == "**":
        value = arg.value
    elif arg.star or not (
        (arg.keyword is None and position == 0) or (arg.keyword is not None and arg.keyword.value in TENSOR_KEYWORDS)
    ):
        return False
    else:
        # inputs["input_ids"], inputs.input_ids: the item of a BatchEncoding
        value = arg.value.value if isinstance(arg.value, (cst.Subscript, cst.Attribute)) else arg.value
    if returns_tensors(value):
        return True
    return isinstance(value, cst.Name) and index.cpu_tensors(value)


INPUTS_PLAN = Fact("optimum_inputs_plan", InputsToModelDevice.plan)
