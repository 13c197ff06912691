"""Stand-in for torch-neuronx, importable only inside a process running on the neuron emulator.

transformers, accelerate and TRL switch to their neuron code paths when this module can be found.
"""

from neuron_migrate.analyzers.emulator import activate as _activate

_activate()

__version__ = "0.0.0+emulated"
EMULATED = True
