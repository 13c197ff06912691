"""NM220: get_model_param_count -> transformers.trainer_pt_utils.get_model_param_count"""

from __future__ import annotations

from neuron_migrate.rules.base import SAFE, Example, Rule, RuleMeta, register
from neuron_migrate.rules.optimum_training.common import DOCS_TRAINING_ARGS, TRIGGERS
from neuron_migrate.rules.tables.optimum_training import ROWS


@register
class TrainingHelpersToTransformers(Rule):
    """``get_model_param_count(model, trainable_only=False)`` counted the whole model across tensor-parallel
    shards; transformers' own (``trainer_pt_utils``) counts DTensor parameters at their global size, so the
    count is the same."""

    meta = RuleMeta(
        "NM220",
        "get_model_param_count -> transformers.trainer_pt_utils.get_model_param_count",
        safety=SAFE,
        summary="The same signature and count from transformers, which the Trainer itself uses.",
        docs=(DOCS_TRAINING_ARGS,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron.models.training.training_utils import get_model_param_count\n\n"
                "trainable = get_model_param_count(model, trainable_only=True)\n"
            ),
            after=(
                "import transformers.trainer_pt_utils\n\n"
                "trainable = transformers.trainer_pt_utils.get_model_param_count(model, trainable_only=True)\n"
            ),
        ),
    )
    rows = ROWS
