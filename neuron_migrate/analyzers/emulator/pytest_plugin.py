"""A pytest fixture for tests that need the emulated ``neuron`` device.

``neuron_emulator`` activates the emulator once per test session (activation cannot be undone) and returns
``torch.neuron``; the test is skipped when torch is missing or a real torch-neuronx is installed.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def neuron_emulator():
    pytest.importorskip("torch")
    from neuron_migrate.analyzers.emulator import RealDeviceAvailable, activate

    try:
        activate(banner=False)
    except RealDeviceAvailable as exc:
        pytest.skip(str(exc))
    import torch

    return torch.neuron
