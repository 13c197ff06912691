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


# --- the emulated neuron device (tests/test_emulator_*.py) -----------------------------------------------------
from neuron_migrate.analyzers.emulator.pytest_plugin import neuron_emulator  # noqa: E402,F401
