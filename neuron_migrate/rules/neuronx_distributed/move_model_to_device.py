"""NM424: move_model_to_device(model, device) -> model.to(device)"""

from __future__ import annotations

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import REVIEW, Edit, Example, register, RuleMeta
from neuron_migrate.rules.calls import receiver
from neuron_migrate.rules.neuronx_distributed.common import DOCS_DISTRIBUTED, TRIGGERS, NxdRule, move_arguments
from neuron_migrate.rules.neuronx_trace.common import LegacyUse


@register
class MoveModelToDevice(NxdRule):
    """``move_model_to_device(model, device)`` -> ``model.to(device)``: NxD's helper moved the model and
    kept its parallel layers' partition attributes on the parameters; on TorchNeuron ``Module.to``
    moves it, tied parameters included (DOCS_DISTRIBUTED)."""

    meta = RuleMeta(
        "NM424",
        "move_model_to_device(model, device) -> model.to(device)",
        safety=REVIEW,
        summary="Module.to moves the model; NxD's partition attributes on the parameters are not kept.",
        docs=(DOCS_DISTRIBUTED,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import torch\n"
                "from neuronx_distributed.parallel_layers import move_model_to_device\n\n"
                'device = torch.device("neuron")\n'
                "move_model_to_device(model, device)\n"
            ),
            after=(
                "import torch\n\n"
                'device = torch.device("neuron")\n'
                "# neuron-migrate(NM424): check no code reads NxD partition attributes "
                "(`param.tensor_model_parallel`) after the move\n"
                "model.to(device)\n"
            ),
        ),
    )
    apis = {"move_model_to_device": "move"}

    @classmethod
    def automatic(cls, use: LegacyUse, answer) -> bool:
        return move_arguments(use.node) is not None

    def move(self, original, updated, use: LegacyUse, api: str):
        if move_arguments(original) is None:
            self.ctx.manual(self.meta, original, 'move the model with `model.to("neuron")`')
            return updated
        bound = move_arguments(updated)
        device = code_of(bound["device"].value) if "device" in bound else '"neuron"'
        moved = self.ctx.expr(f"{receiver(bound['model'].value)}.to({device})")
        review = "check no code reads NxD partition attributes (`param.tensor_model_parallel`) after the move"
        return Edit(moved, message="move_model_to_device -> Module.to", review=review)
