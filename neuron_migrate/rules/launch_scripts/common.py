"""What the launch-script rules share: documentation links, the review and TODO texts of more than one
rule, the ShellRule base class and where a rule's marker goes (above an array, above a command).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuron_migrate.migrate.shell import Command, ShellEdits, ShellScript
from neuron_migrate.rules.base import Rule

if TYPE_CHECKING:
    from neuron_migrate.migrate.shell import ListKey


NEURON_DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest"
DOCS_PARALLEL_COMPILE = (
    f"{NEURON_DOCS}/frameworks/torch/torch-neuronx/api-reference-guide/training/pytorch-neuron-parallel-compile.html"
)
DOCS_ENV = f"{NEURON_DOCS}/torch/reference/env-vars.html"
DOCS_COMPILE = f"{NEURON_DOCS}/torch/compile/reference-torch-compile.html"
DOCS_DISTRIBUTED = f"{NEURON_DOCS}/torch/guides/torch-distributed.html"
DOCS_HF = f"{NEURON_DOCS}/torch/reference/torchneuron-resources.html"
DOCS_NO_XLA_INFERENCE = (
    f"{NEURON_DOCS}/about-neuron/announcements/neuron2.x/announce-no-support-torch-xla-inference-trn.html"
)
DOCS_TRAINING_ARGS = "https://huggingface.co/docs/transformers/main_classes/trainer#transformers.TrainingArguments"
DOCS_DISTRIBUTED_CONFIG = "https://huggingface.co/docs/transformers/main/en/perf_infer_gpu_multi"
DOCS_TORCHRUN = "https://pytorch.org/docs/stable/elastic/run.html"
DOCS_DCP = "https://pytorch.org/docs/stable/distributed.checkpoint.html"
DOCS_TRN2_LAYOUT = f"{NEURON_DOCS}/training/best-practices.html"
# The optimum-cli commands: what each did is in optimum-neuron's own command modules.
DOCS_CLI = "https://huggingface.co/docs/optimum-neuron/guides/export_model"
ASYNC_LOAD = "HF_DEACTIVATE_ASYNC_LOAD"
COMPILE_FLAGS = "--torch_compile true --torch_compile_backend neuron"


def _indexed_array(script: ShellScript, key: ListKey | None) -> bool:
    return key is not None and key[0] == "array" and script.array_is_indexed(script.arrays[key[1]].name)


def _anchor(script: ShellScript, key: ListKey | None, command: Command) -> int:
    """Where the marker about an item goes: above its array, else above its command."""
    if key is not None and key[0] == "array":
        return script.arrays[key[1]].start
    return command.start


def _command_span(command: Command) -> tuple[int, int]:
    return command.start, command.end


# ----- the rules ----------------------------------------------------------------------------------------------


class ShellRule(Rule):
    """A rule of launch scripts: the shell adapter calls :meth:`check` once per script."""

    def __init__(self, ctx: ShellEdits) -> None:
        super().__init__(ctx)  # type: ignore[arg-type]

    def check(self, script: ShellScript) -> None:
        raise NotImplementedError


_PARALLEL_COMPILE_REVIEW = (
    "neuron_parallel_compile removed: TorchNeuron compiles on first call and keeps the result in its NEFF cache "
    "(TORCH_NEURONX_NEFF_CACHE_DIR); a step that only extracted graphs now really runs: shorten it or drop it"
)
_ASYNC_LOAD_WHY = "transformers' threaded weight loading can hang on the neuron device"
_COMPILE_REVIEW = (
    f"{COMPILE_FLAGS} added: Trainer compiles the model with the neuron backend; check that the script passes "
    "these flags on to its TrainingArguments"
)
# A whole trn1.32xlarge: 16 Trainium chips of 2 NeuronCores. TorchNeuron runs on Trn2/Trn3 only, where
# a trn2.48xlarge shows 64 logical NeuronCores (16 Trainium2 chips, 8 physical cores each, paired by the
# default LNC=2), one process each (DOCS_TRN2_LAYOUT).
TRN1_NODE_CORES = "32"
_TRN2_CORES = (
    "--nproc_per_node {count} was one process per NeuronCore of a trn1.32xlarge; TorchNeuron runs on Trn2/Trn3, "
    "where a trn2.48xlarge has 64 logical NeuronCores (4 per Trainium2 chip with the default LNC=2): launch 64 "
    "processes there and choose the parallel sizes for 64 ranks"
)


def _manual(rule: ShellRule, command: Command, step: str) -> None:
    _manual_span(rule, _command_span(command), step, command.start)


def _manual_span(rule: ShellRule, span: tuple[int, int], step: str, anchor: int) -> None:
    ctx, meta = rule.ctx, rule.meta
    if ctx.suppressed(meta.id, span):
        ctx.skip(meta, *span)
    else:
        ctx.manual(meta, *span, step, anchor)
