"""Stepping: the lazy-tensor graph cut points of PyTorch/XLA have no meaning in eager TorchNeuron.

``xm.mark_step()`` cut and launched the pending XLA graph. TorchNeuron runs eagerly (ops are
queued and fused adaptively) and ``torch.compile`` regions bound graphs, so the call goes away;
where a caller waited for the device, ``torch.neuron.synchronize()`` does that.

``source_text`` is shared with the data-loading and launch rules.
"""

from __future__ import annotations

from neuron_migrate.rules.xla_step.common import inline_lambda, with_args

__all__ = [
    "inline_lambda",
    "with_args",
]
