"""optimum-neuron inference names a table answers: NeuronModelForEmbedding (NM303) and the compiled-model
base classes (NM306), each with the next step."""

from __future__ import annotations

from neuron_migrate.rules.optimum_names import optimum_names, with_methods
from neuron_migrate.rules.rows import Manual, rows_for_names

EMBEDDING = optimum_names("NeuronModelForEmbedding", "models.inference.modeling_utils")
EMBEDDING_NEXT_STEP = (
    'use `SentenceTransformer(model_id, device="neuron")`, or `AutoModel.from_pretrained(model_id, '
    'device_map="neuron")` and pool its last hidden state as the model card says'
)
# Base classes of the compiled models: nothing stock plays their part.
BASE_CLASSES = {
    "NeuronTracedModel": optimum_names("NeuronTracedModel", "modeling_traced"),
    "NeuronModel": optimum_names("NeuronModel", "modeling_base", top_level=False),
    "NeuronPreTrainedModel": optimum_names(
        "NeuronPreTrainedModel", "models.inference.modeling_utils", top_level=False
    ),
    # up to 0.1
    "NeuronDecoderModel": optimum_names("NeuronDecoderModel", "modeling_decoder"),
}
BASE_CLASS_STEP = (
    "{name} wrapped a compiled artifact and has no counterpart: use the transformers model class, or "
    "PreTrainedModel for type checks"
)

ROWS = (
    *rows_for_names(
        "NM303",
        (*EMBEDDING, *with_methods(EMBEDDING, "from_pretrained", "get_neuron_config", "export")),
        Manual(EMBEDDING_NEXT_STEP),
    ),
    *(
        row
        for name, qnames in BASE_CLASSES.items()
        for row in rows_for_names(
            "NM306",
            (*qnames, *with_methods(qnames, "from_pretrained", "load_model")),
            Manual(BASE_CLASS_STEP.format(name=name)),
        )
    ),
)
