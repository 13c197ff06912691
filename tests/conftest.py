from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"

# torchrun's variables of an outer launch: a program a test starts decides its own ranks
LAUNCHER_VARS = ("LOCAL_RANK", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_WORLD_SIZE")


def program_env(*paths, **extra) -> dict[str, str]:
    """The environment of a program a test starts: this one without launcher variables, ``extra`` set, and
    ``paths`` then the checkout first on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    env.update(extra)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def run_cli(*args, cwd, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m neuron_migrate ARGS`` in ``cwd``, output captured."""
    return subprocess.run([sys.executable, "-m", "neuron_migrate", *map(str, args)], cwd=cwd, env=program_env(),
                          capture_output=True, text=True, timeout=timeout)


# Tests never touch the network or a shared cache folder.
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NEURON_MIGRATE_CACHE_DIR", str(tmp_path_factory.mktemp("nm-cache")))


STUBS = Path(__file__).resolve().parent / "stubs"


@pytest.fixture(autouse=True)
def _no_torch_xla_double_left_imported():
    """The torch_xla test double runs legacy programs in subprocesses only. Should any test import it into this
    process, it is dropped afterwards, and transformers' cached "is torch_xla available" answer with it: else
    every later test would take transformers' XLA code paths against a stand-in that does not have them."""
    yield
    import sys

    doubles = [name for name, module in sys.modules.items()
               if name.split(".")[0] == "torch_xla" and str(getattr(module, "__file__", "") or "").startswith(str(STUBS))]
    on_path = [entry for entry in sys.path if Path(entry or ".").resolve() == STUBS]
    if not doubles and not on_path:
        return
    for name in doubles:
        del sys.modules[name]
    for entry in on_path:
        sys.path.remove(entry)
    utils = sys.modules.get("transformers.utils.import_utils")
    if utils is not None and hasattr(utils.is_torch_xla_available, "cache_clear"):
        utils.is_torch_xla_available.cache_clear()


@pytest.fixture(scope="session")
def plan():
    from neuron_migrate.migrate.engine import RulePlan

    return RulePlan.build()


@pytest.fixture(scope="session")
def migrate(plan):
    """Rewrite a source text with every rule; returns the engine's PythonResult."""
    from neuron_migrate.migrate.engine import migrate_python

    def run(source: str, path: str = "example.py", **kwargs):
        return migrate_python(source, path, plan, **kwargs)

    return run


@pytest.fixture(scope="session")
def migrate_keeping_dual_stack():
    """Rewrite a source text with every rule and --keep-dual-stack."""
    from neuron_migrate.migrate.engine import RulePlan, migrate_python

    plan = RulePlan.build(keep_dual_stack=True)

    def run(source: str, path: str = "example.py", **kwargs):
        return migrate_python(source, path, plan, **kwargs)

    return run


# --- the emulated neuron device (tests/test_emulator_*.py) -----------------------------------------------------
from neuron_migrate.analyzers.emulator.pytest_plugin import neuron_emulator  # noqa: E402,F401
