"""What the xla_debug rules share: helpers, constants and base classes."""

from __future__ import annotations

from neuron_migrate.rules.tables.xla_debug import PROFILE

DOCS_ENV = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/env-vars.html"
DOCS_COMPILE = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html"
DOCS_RESOURCES = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/torchneuron-resources.html"
DOCS_PROFILER = "https://docs.pytorch.org/docs/stable/profiler.html"
# XLA trace annotation -> the parameters of its signature; ``torch.profiler.record_function(name)``
# takes only the name.
ANNOTATIONS = {
    "Trace": ("name",),
    "StepTrace": ("name", "step_num"),
}
STEP_TRACE_REVIEW = (
    "StepTrace also ended the XLA step (eager TorchNeuron needs no cut); "
    f"inside a {PROFILE} block call prof.step() once per step"
)
