"""Static audit: hazards on the native backend, found without running anything.

``scan_source(text, path)`` gives the findings of one file; the family modules register their
checks on import.
"""

from __future__ import annotations

import importlib

FAMILIES = ("shapes", "host_sync", "custom_ops", "cuda", "models", "recipe")


def load_checks() -> None:
    for name in FAMILIES:
        importlib.import_module(f"{__name__}.{name}")


def scan_source(source: str, path: str):
    from neuron_migrate.analyzers.static.base import scan_source as scan

    load_checks()
    return scan(source, path)
