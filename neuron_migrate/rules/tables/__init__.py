"""Row tables (see rules/rows.py), one module per rule family: the names a table can answer, with
the text of their next steps. The family's rule modules keep only the rewrites that need code."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def family_tables() -> list[ModuleType]:
    """Every table module of this package (each defines ``ROWS``)."""
    return [importlib.import_module(f"{__name__}.{info.name}") for info in pkgutil.iter_modules(__path__)]
