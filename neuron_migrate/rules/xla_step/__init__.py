"""Stepping: the lazy-tensor graph cut points of PyTorch/XLA have no meaning in eager TorchNeuron.

``xm.mark_step()`` cut and launched the pending XLA graph. TorchNeuron runs eagerly (ops are
queued and fused adaptively) and ``torch.compile`` regions bound graphs, so the call goes away;
where a caller waited for the device, ``torch.neuron.synchronize()`` does that.

``source_text`` is shared with the data-loading and launch rules.
"""

from __future__ import annotations

from neuron_migrate.rules.xla_step.common import inline_lambda, with_args
from neuron_migrate.rules.xla_step.compile_to_torch_compile import CompileToTorchCompile
from neuron_migrate.rules.xla_step.lazy_mode_toggle_removal import LazyModeToggleRemoval
from neuron_migrate.rules.xla_step.mark_step_removal import MarkStepRemoval
from neuron_migrate.rules.xla_step.optimizer_step import OptimizerStep
from neuron_migrate.rules.xla_step.step_closure_call import StepClosureCall
from neuron_migrate.rules.xla_step.step_context_removal import StepContextRemoval
from neuron_migrate.rules.xla_step.wait_device_ops import WaitDeviceOps

__all__ = [
    "CompileToTorchCompile",
    "LazyModeToggleRemoval",
    "MarkStepRemoval",
    "OptimizerStep",
    "StepClosureCall",
    "StepContextRemoval",
    "WaitDeviceOps",
    "inline_lambda",
    "with_args",
]
