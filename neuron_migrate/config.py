"""One frozen :class:`Config` from ``[tool.neuron-migrate]`` in the nearest ``pyproject.toml`` plus flags.

The file is found by walking up from the first path given (like ruff and black), so running the tool
from anywhere inside a project picks up that project's settings. Keyword arguments are the command
line: ``None`` means "not given", anything else overrides the file.

.. code-block:: toml

    [tool.neuron-migrate]
    select = ["NM1"]
    ignore = ["NM150"]
    extend-exclude = ["third_party/", "*_pb2.py"]
    per-file-ignores = {"tests/**" = ["NM110"]}
    no-comments = false
    jobs = 4
    cache = true
    max-file-size = "1MB"
    max-file-seconds = 60
    write-read-only = false
    from = "cuda"
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

SECTION = "neuron-migrate"
CACHE_ENV = "NEURON_MIGRATE_CACHE_DIR"

# Per-file limits. The largest file of the real legacy corpus the engine reads holds 0.2 MB of code and takes
# about 5 CPU-seconds (15 s of wall time on a loaded 2-core machine); the defaults leave room for five times
# that much code and ten times that time, while a generated module of a few MB (minutes, and GBs of memory)
# is skipped.
DEFAULT_MAX_FILE_SIZE = 1_000_000  # bytes of code
DEFAULT_MAX_FILE_SECONDS = 60.0
# What `from` may name: the legacy Neuron stack (the default), or CUDA code (its rules run besides the legacy ones).
MIGRATE_FROM = ("legacy", "cuda")


class ConfigError(Exception):
    """A pyproject.toml that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    # gitwildmatch globs, relative to ``root``. ``exclude`` given on the command line replaces the
    # file's list; ``extend_exclude`` always adds to it.
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    no_comments: bool = False
    # Dual-stack code keeps its torch_xla branch and gains a neuron one (for libraries that must still run
    # on the XLA stack); by default the XLA branch becomes the neuron one.
    keep_dual_stack: bool = False
    jobs: int | None = None
    cache: bool = True
    cache_dir: Path | None = None
    # The folder of the pyproject.toml the settings came from, else the working directory.
    root: Path = Path(".")
    source: Path | None = None
    # (gitwildmatch pattern relative to ``root``, rule ids or prefixes): more rules to ignore in matching files
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # A file with more code than this (bytes; 0: no limit), or whose rewrite takes longer (seconds; 0: no
    # limit), is skipped and reported.
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    max_file_seconds: float = DEFAULT_MAX_FILE_SECONDS
    # Rewrite files without write permission too (by default they are skipped and reported, as ruff and black do).
    write_read_only: bool = False
    # "cuda": the CUDA rules run too (``rewrite --from cuda``); "legacy": only the legacy Neuron rules.
    migrate_from: str = "legacy"

    @property
    def excludes(self) -> tuple[str, ...]:
        return (*self.exclude, *self.extend_exclude)

    @property
    def workers(self) -> int:
        return self.jobs or os.cpu_count() or 1

    def fingerprint(self) -> str:
        """Hash of the settings that change what a file is rewritten to; the cache keys on it.

        Excludes, jobs, the per-file limits, read-only handling and cache location decide which files are
        visited or written and how, not what a file is rewritten to, so changing them must not throw away
        cached results (a file skipped for a limit is never cached).
        """
        data = {
            "select": sorted(s.upper() for s in self.select),
            "ignore": sorted(s.upper() for s in self.ignore),
            "per_file_ignores": [[pattern, sorted(ids)] for pattern, ids in self.per_file_ignores],
            "no_comments": self.no_comments,
            "keep_dual_stack": self.keep_dual_stack,
            "from": self.migrate_from,
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def _strings(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def _per_file_ignores(value: Any) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
    if not isinstance(value, dict):
        return None
    out = []
    for pattern, ids in value.items():
        ids = _strings(ids)
        if ids is None:
            return None
        out.append((pattern, ids))
    return tuple(out)


def _boolean(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _migrate_from(value: Any) -> str | None:
    return value if value in MIGRATE_FROM else None


def _positive_int(value: Any) -> int | None:
    # bool is an int subclass: `jobs = true` is a mistake, not one worker.
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    return None


def _non_negative_number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


_SIZE_UNITS = {"": 1, "b": 1, "kb": 1000, "k": 1000, "mb": 1000**2, "m": 1000**2, "gb": 1000**3, "g": 1000**3,
               "kib": 1024, "mib": 1024**2, "gib": 1024**3}


def parse_size(value: Any) -> int | None:
    """Bytes from ``1500000``, ``"1500000"``, ``"1.5MB"``, ``"500 KB"`` or ``"1MiB"`` (KB, MB, GB are powers of
    1000); None for anything else. 0 means no limit."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value >= 0 else None
    if not isinstance(value, str):
        return None
    import re

    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", value)
    if not match or match.group(2).lower() not in _SIZE_UNITS:
        return None
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2).lower()])


def size_text(size: int) -> str:
    """``1 MB``, ``2.1 MB``, ``350 KB``, ``12 bytes``: how the limits are written back to the user."""
    for unit, factor in (("GB", 1000**3), ("MB", 1000**2), ("KB", 1000)):
        if size >= factor:
            return f"{size / factor:.1f}".removesuffix(".0") + f" {unit}"
    return f"{size} bytes"


# pyproject key -> (Config field, converter returning None for a wrong type, what the key wants)
KEYS = {
    "select": ("select", _strings, "a list of rule ids or prefixes"),
    "ignore": ("ignore", _strings, "a list of rule ids or prefixes"),
    "exclude": ("exclude", _strings, "a list of glob patterns"),
    "extend-exclude": ("extend_exclude", _strings, "a list of glob patterns"),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores,
                         'a table of glob pattern = [rule ids], e.g. {"tests/**" = ["NM1"]}'),
    "no-comments": ("no_comments", _boolean, "true or false"),
    "keep-dual-stack": ("keep_dual_stack", _boolean, "true or false"),
    "jobs": ("jobs", _positive_int, "a positive integer"),
    "cache": ("cache", _boolean, "true or false"),
    "max-file-size": ("max_file_size", parse_size, 'a size in bytes, or with a unit: "1MB", "500KB" (0: no limit)'),
    "max-file-seconds": ("max_file_seconds", _non_negative_number, "a number of seconds (0: no limit)"),
    "write-read-only": ("write_read_only", _boolean, "true or false"),
    "from": ("migrate_from", _migrate_from, '"legacy" or "cuda"'),
}


def find_pyproject(start: Path) -> tuple[Path, dict[str, Any]] | None:
    """The nearest pyproject.toml at or above ``start`` that has a ``[tool.neuron-migrate]`` table."""
    start = start.resolve()
    folder = start if start.is_dir() else start.parent
    for candidate in (folder, *folder.parents):
        path = candidate / "pyproject.toml"
        if not path.is_file():
            continue
        section = _read_section(path)
        if section is not None:
            return path, section
    return None


def _read_section(path: Path) -> dict[str, Any] | None:
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    section = data.get("tool", {}).get(SECTION) if isinstance(data.get("tool"), dict) else None
    if section is None:
        return None
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.{SECTION}] must be a table")
    return section


def _from_section(path: Path, section: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, raw in section.items():
        if key not in KEYS:
            known = ", ".join(KEYS)
            hint = f" (did you mean {key.replace('_', '-')!r}?)" if key.replace("_", "-") in KEYS else ""
            raise ConfigError(f"{path}: unknown key {key!r} in [tool.{SECTION}]{hint}; known keys: {known}")
        name, convert, wanted = KEYS[key]
        value = convert(raw)
        if value is None:
            raise ConfigError(f"{path}: [tool.{SECTION}] {key} must be {wanted}, got {raw!r}")
        values[name] = value
    return values


def default_cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("neuron-migrate"))


def load_config(
    paths: Sequence[Path | str] = (),
    *,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    no_comments: bool | None = None,
    keep_dual_stack: bool | None = None,
    jobs: int | None = None,
    cache: bool | None = None,
    exclude: Iterable[str] | None = None,
    extend_exclude: Iterable[str] | None = None,
    max_file_size: int | None = None,
    max_file_seconds: float | None = None,
    write_read_only: bool | None = None,
    migrate_from: str | None = None,
) -> Config:
    """Settings for a run over ``paths``: the project's pyproject.toml, overridden by the arguments."""
    start = Path(paths[0]) if paths else Path.cwd()
    found = find_pyproject(start)
    values: dict[str, Any] = {}
    config = Config(root=Path.cwd().resolve())
    if found is not None:
        path, section = found
        values = _from_section(path, section)
        config = replace(config, root=path.parent, source=path)

    flags = {
        "select": None if select is None else tuple(select),
        "ignore": None if ignore is None else tuple(ignore),
        "exclude": None if exclude is None else tuple(exclude),
        "no_comments": no_comments,
        "keep_dual_stack": keep_dual_stack,
        "jobs": jobs,
        "cache": cache,
        "max_file_size": max_file_size,
        "max_file_seconds": max_file_seconds,
        "write_read_only": write_read_only,
        "migrate_from": migrate_from,
    }
    if migrate_from is not None and _migrate_from(migrate_from) is None:
        raise ConfigError(f"from must be one of {', '.join(MIGRATE_FROM)}, got {migrate_from!r}")
    if jobs is not None and _positive_int(jobs) is None:
        raise ConfigError(f"jobs must be a positive integer, got {jobs!r}")
    values.update({name: value for name, value in flags.items() if value is not None})
    if extend_exclude is not None:
        values["extend_exclude"] = (*values.get("extend_exclude", ()), *extend_exclude)
    return replace(config, **values, cache_dir=default_cache_dir())
