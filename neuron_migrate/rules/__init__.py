"""Rule families. Each family is a package with one module per rule (leftovers and notebooks are one
module each); importing a rule's module registers the rule. ``load_all`` imports every module of this
package, and the registry (:mod:`neuron_migrate.ruleapi.registry`) calls it the first time it is asked
for a rule."""

from __future__ import annotations

import importlib
import pkgutil

# Modules (and single APIs) that exist only on the legacy stack: imports of them are removed once
# unused, and any reference to them that no rule migrates is reported (NM100). torch_neuronx itself
# is the TorchNeuron package too, so only its XLA-era parts are listed.
LEGACY_MODULES = (
    "torch_xla",
    "optimum.neuron",
    "neuronx_distributed",
    "torch_neuronx.xla_impl",
    "torch_neuronx.experimental",
    "torch_neuronx.testing",
    "torch_neuronx.pyhlo",
    "torch_neuronx.trace",
    "torch_neuronx.analyze",
    "torch_neuronx.DataParallel",
    "torch_neuronx.lazy_load",
    "torch_neuronx.async_load",
    "torch_neuronx.replace_weights",
    "torch_neuronx.move_trace_to_device",
    "torch_neuronx.dynamic_batch",
    "torch_neuronx.nki_jit",
    "torch_neuronx.proto",
    "torch_neuronx.utils.get_platform_target",
    "torch_neuronx.distributed.fsdp_mics",
    # the XLA-era Neuron PJRT plugin; TorchNeuron does not load it
    "libneuronxla",
)
# Their top-level packages: a file that names none of them uses no legacy module (the trigger words of
# the rules that look at every legacy import).
LEGACY_ROOTS = tuple(dict.fromkeys(module.split(".")[0] for module in LEGACY_MODULES))

_loaded = False


def load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    # Every module under this package: a rule registers itself where it is defined (@register), so a new
    # rule module needs no other mention anywhere.
    for module in pkgutil.walk_packages(__path__, f"{__name__}."):
        importlib.import_module(module.name)
