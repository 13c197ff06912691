"""Legacy torch_xla collectives against their migration: the legacy script under torchrun with the torch_xla
test double (collectives span all ranks, as under PJRT), the migrated one on the emulated neuron device."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from test_emulator_programs import PROGRAMS, STUBS, _close, _emulate, _env

torch = pytest.importorskip("torch")


def _flat(value):
    if isinstance(value, list):
        return [x for item in value for x in _flat(item)]
    return [value]


@pytest.mark.slow
@pytest.mark.parametrize("nproc", [2, 1])
def test_migrated_collectives_compute_what_torch_xla_computed(tmp_path, nproc):
    """xm.all_reduce (scaled, max, the optimizer's gradients in place), xm.all_gather (dims 0, 1, -1) and
    xm.collective_broadcast:
    the legacy script under torchrun against the torch_xla double, then migrated on the emulated device."""
    legacy = tmp_path / "legacy.py"
    shutil.copy(PROGRAMS / "legacy_collectives.py", legacy)
    script = tmp_path / "migrated.py"
    shutil.copy(legacy, script)
    rewrite = subprocess.run([sys.executable, "-m", "neuron_migrate", "rewrite", "-q", str(script)], env=_env(),
                             capture_output=True, text=True, timeout=120)
    assert rewrite.returncode == 1, rewrite.stdout + rewrite.stderr
    code = script.read_text()
    assert "TODO(neuron-migrate" not in code and "import torch_xla" not in code
    assert not [line for line in code.splitlines() if "xm." in line and not line.lstrip().startswith("#")]
    assert "dist.all_gather(parts, value)" in code and "torch.cat(parts, dim=-1)" in code

    launcher = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc)]
    original = subprocess.run([*launcher, str(legacy), str(tmp_path / "xla")], cwd=tmp_path, env=_env(STUBS),
                              capture_output=True, text=True, timeout=120)
    assert original.returncode == 0, original.stdout[-2000:] + original.stderr[-3000:]
    proc = _emulate([*(["--nproc", str(nproc)] if nproc > 1 else []), str(script), str(tmp_path / "neuron")],
                    cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]

    for rank in range(nproc):
        before = json.loads((tmp_path / f"xla.{rank}.json").read_text())
        after = json.loads((tmp_path / f"neuron.{rank}.json").read_text())
        assert after["device"] == "neuron" and after["world"] == before["world"] == nproc
        for key in ("total", "peak", "counts", "rows", "columns", "middle", "shared", "gradients"):
            _close(_flat(after[key]), _flat(before[key]))
        if nproc == 2:
            # Every rank's tensor made it into the gather, in rank order; the broadcast left rank 1's values.
            assert _flat(before["columns"]) == [0.0, 1.0, 2.0, 10.0, 11.0, 12.0, 3.0, 4.0, 5.0, 13.0, 14.0, 15.0]
            assert _flat(before["shared"])[:6] == [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]
