"""What every optimum_training rule reads: the documentation links, the trigger word and the start-up
settings a migrated training script gets (NM217 writes them; the other rules' examples show them).

The family's machinery lives beside it, one module per job: :mod:`.classes` (the legacy classes, their
stock twins from the rows of ``rules/tables/optimum_training.py``, and how their calls are shaped),
:mod:`.script_facts` and :mod:`.script_scan` (what the file says before any of it is rewritten),
:mod:`.keyword_edits` (keyword arguments edited in a call or a dict), :mod:`.stock_class` (the rules
that rename a class to its twin and edit its call) and :mod:`.arguments` (the TrainingArguments field map).
"""

from __future__ import annotations

NEURON_DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest"
DOCS_HF = f"{NEURON_DOCS}/torch/reference/torchneuron-resources.html"
DOCS_FINE_TUNING = f"{NEURON_DOCS}/torch/tutorials/tutorial-hf-fine-tuning.html"
DOCS_COMPILE = f"{NEURON_DOCS}/torch/compile/reference-torch-compile.html"
DOCS_DISTRIBUTED = f"{NEURON_DOCS}/torch/guides/torch-distributed.html"
DOCS_TRAINING_ARGS = "https://huggingface.co/docs/transformers/main_classes/trainer#transformers.TrainingArguments"
DOCS_SFT = "https://huggingface.co/docs/trl/sft_trainer"
DOCS_ORPO = "https://huggingface.co/docs/trl/orpo_trainer"
DOCS_ACCELERATE = "https://huggingface.co/docs/accelerate/package_reference/accelerator"
DOCS_PEFT = "https://huggingface.co/docs/peft/package_reference/peft_model"
DOCS_DISTRIBUTED_CONFIG = "https://huggingface.co/docs/transformers/main/en/perf_infer_gpu_multi"
TRIGGERS = (b"optimum",)
# The start-up settings of NM217 and why each is there.
DYNAMIC_SHAPES_WHY = (
    "the neuron compile backend wants static shapes: recompile per shape instead of tracing dynamic dims"
)
ASYNC_LOAD_WHY = "transformers' threaded weight loading can hang on the neuron device"
STARTUP = (
    f"# {DYNAMIC_SHAPES_WHY}\n"
    "torch._dynamo.config.automatic_dynamic_shapes = False\n"
    f"# {ASYNC_LOAD_WHY}\n"
    'os.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1")\n\n'
)
