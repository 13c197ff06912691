"""What every optimum_inference rule reads: the documentation links, the trigger word, and the class map
of optimum-neuron's inference models (the launch-script rules read it too, for an export command's class).

The family's machinery lives beside it, one module per job: :mod:`.reading` (a loading call's
arguments, literal dict spreads included), :mod:`.export_settings` (what each export keyword becomes),
:mod:`.loader_index` (the file's loading calls, read once for every loader rule), :mod:`.loader_rule`
(the base of those rules) and :mod:`.model_loading` (a Neuron model class -> its transformers class).
"""

from __future__ import annotations

from neuron_migrate.rules.optimum_names import optimum_names

DOCS_HF_NATIVE = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/torchneuron-resources.html"
DOCS_WHAT_CHANGES = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html"
DOCS_STATIC_SHAPES = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html"
DOCS_HF_INFERENCE = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/_sources/torch/tutorials/"
    "tutorial-hf-inference-torch-compile.rst"
)
DOCS_STATIC_CACHE = "https://huggingface.co/docs/transformers/llm_optims"
DOCS_NO_XLA_INFERENCE = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/announcements/neuron2.x/"
    "announce-no-support-torch-xla-inference-trn.html"
)
DOCS_SENTENCE_TRANSFORMERS = "https://sbert.net/docs/package_reference/sentence_transformer/SentenceTransformer.html"
OPTIMUM_TRIGGERS = (b"optimum",)
PRECOMPILED_ORG = "aws-neuron/"  # the Hub organisation of the models optimum-neuron compiled

# optimum-neuron task model -> (transformers class, modules it is importable from besides the top level)
TASK_MODELS = {
    "NeuronModelForFeatureExtraction": ("AutoModel", ("modeling",)),
    "NeuronModelForMaskedLM": ("AutoModelForMaskedLM", ("modeling",)),
    "NeuronModelForQuestionAnswering": ("AutoModelForQuestionAnswering", ("modeling",)),
    "NeuronModelForSequenceClassification": ("AutoModelForSequenceClassification", ("modeling",)),
    "NeuronModelForTokenClassification": ("AutoModelForTokenClassification", ("modeling",)),
    "NeuronModelForMultipleChoice": ("AutoModelForMultipleChoice", ("modeling",)),
    "NeuronModelForImageClassification": ("AutoModelForImageClassification", ("modeling",)),
    "NeuronModelForSemanticSegmentation": ("AutoModelForSemanticSegmentation", ("modeling",)),
    "NeuronModelForObjectDetection": ("AutoModelForObjectDetection", ("modeling",)),
    "NeuronModelForCTC": ("AutoModelForCTC", ("modeling",)),
    "NeuronModelForAudioClassification": ("AutoModelForAudioClassification", ("modeling",)),
    "NeuronModelForAudioFrameClassification": ("AutoModelForAudioFrameClassification", ("modeling",)),
    "NeuronModelForXVector": ("AutoModelForAudioXVector", ("modeling",)),
    "NeuronModelForSeq2SeqLM": ("AutoModelForSeq2SeqLM", ("modeling_seq2seq",)),
    "NeuronBertModel": ("BertModel", ("models.inference.bert", "models.inference.bert.modeling_bert")),
    "NeuronBertForMaskedLM": ("BertForMaskedLM", ("models.inference.bert", "models.inference.bert.modeling_bert")),
    "NeuronBertForQuestionAnswering": (
        "BertForQuestionAnswering",
        ("models.inference.bert", "models.inference.bert.modeling_bert"),
    ),
    "NeuronBertForSequenceClassification": (
        "BertForSequenceClassification",
        ("models.inference.bert", "models.inference.bert.modeling_bert"),
    ),
    "NeuronBertForTokenClassification": (
        "BertForTokenClassification",
        ("models.inference.bert", "models.inference.bert.modeling_bert"),
    ),
    "NeuronBertForMultipleChoice": (
        "BertForMultipleChoice",
        ("models.inference.bert", "models.inference.bert.modeling_bert"),
    ),
    "NeuronCLIPModel": ("CLIPModel", ("models.inference.clip", "models.inference.clip.modeling_clip")),
    "NeuronCLIPForImageClassification": (
        "CLIPForImageClassification",
        ("models.inference.clip", "models.inference.clip.modeling_clip"),
    ),
    "NeuronWhisperForConditionalGeneration": (
        "WhisperForConditionalGeneration",
        ("models.inference.whisper", "models.inference.whisper.modeling_whisper"),
    ),
    "NeuronYolosForObjectDetection": (
        "YolosForObjectDetection",
        ("models.inference.yolos", "models.inference.yolos.modeling_yolos"),
    ),
}
# 0.4.x defines it in models.inference.modeling_utils; up to 0.3 in modeling_decoder.
CAUSAL_LM = optimum_names("NeuronModelForCausalLM", "models.inference.modeling_utils", "modeling_decoder")
SENTENCE_TRANSFORMERS = (
    *optimum_names("NeuronSentenceTransformers", "modeling_sentence_transformers"),
    # up to 0.3
    *optimum_names("NeuronModelForSentenceTransformers", "modeling_sentence_transformers", "modeling"),
)
PIPELINE = optimum_names("pipeline", "pipelines", "pipelines.transformers", "pipelines.transformers.base")


def class_table(classes: dict[str, tuple[str, tuple[str, ...]]]) -> dict[str, str]:
    """Every import path of each legacy class -> its replacement's name."""
    return {qname: target for name, (target, modules) in classes.items() for qname in optimum_names(name, *modules)}


TASK_MODEL_TARGETS = class_table(TASK_MODELS)
