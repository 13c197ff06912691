"""Rule families. Each module registers its rules on import; ``load_all`` imports them all."""

from __future__ import annotations

import importlib

FAMILIES = (
    "leftovers",
    "xla_device",
    "xla_step",
    "xla_distributed",
    "xla_data",
    "xla_amp",
    "xla_debug",
    "env_vars",
)

# Modules whose every import is legacy-only; imports of them are removed once unused, and any
# reference to them that no rule migrates is reported (NM100). Later families extend this.
LEGACY_MODULES = ("torch_xla",)

_loaded = False


def load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name in FAMILIES:
        try:
            importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
