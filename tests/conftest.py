from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"

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
