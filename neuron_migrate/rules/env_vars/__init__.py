"""Environment variables of the XLA-era stack, set from Python.

The knowledge is one table, :data:`ENV_VARS` (variable -> what to do with it), read through
:func:`classify_env_var`; the shell-script rules use the same table. The rules below apply it to
the ways Python code sets a variable: ``os.environ["X"] = v``, ``os.environ.setdefault("X", v)``,
``os.putenv("X", v)`` and ``os.environ.update({...})`` / ``update(X=v)`` with literal names.
"""

from __future__ import annotations

from neuron_migrate.rules.env_vars.common import (
    BY_HAND,
    DELETE,
    DELETE_BY_HAND,
    ENV_VARS,
    KEEP,
    RENAME,
    classify_env_var,
    drop_flags,
    flags_in,
)

__all__ = [
    "BY_HAND",
    "DELETE",
    "DELETE_BY_HAND",
    "ENV_VARS",
    "KEEP",
    "RENAME",
    "classify_env_var",
    "drop_flags",
    "flags_in",
]
