"""The runtime analyzer of ``neuron-migrate audit --run``: what a program does on a static-shape compiler.

``watch()`` records, inside a ``with`` block, every compilation and recompilation (with its guard failure in plain
words and the user line that called the compiled function), every graph break, the input shapes of each compiled
function (and the padding that would collapse them), and during the first steps every data-dependent or custom op
that ran. ``analyze_script()`` runs a script or module under it, on the CPU emulator of the neuron device when there
is no real one. Findings use the hazard catalog (``neuron_migrate.analyzers.hazards``) and the static audit's
fingerprints. Importing this package does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from neuron_migrate.analyzers.runtime.script import RuntimeResult, analyze_script
    from neuron_migrate.analyzers.runtime.session import Summary, Watch, watch

__all__ = ["RuntimeResult", "Summary", "Watch", "analyze_script", "watch"]

_HOMES = {
    "watch": "session", "Watch": "session", "Summary": "session",
    "analyze_script": "script", "RuntimeResult": "script",
}


def __getattr__(name: str):
    if name in _HOMES:
        import importlib

        module = importlib.import_module(f"neuron_migrate.analyzers.runtime.{_HOMES[name]}")
        return getattr(module, name)
    raise AttributeError(name)
