"""The process pool against the signals a CI runner sends: workers never outlive the run that started them,
and SIGTERM stops a run as Ctrl-C does (every file untouched or fully written). Real processes, real signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from neuron_migrate.config import load_config
from neuron_migrate.migrate.runner import run
from neuron_migrate.migrate.write import TEMP_SUFFIX

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc and sends POSIX signals")

# Each file gives a worker a few tenths of a second of work, so that the workers are busy when the signal comes.
STEP = "def step_{n}(loss):\n    xm.mark_step()\n    return xm.xrt_world_size() * loss\n\n\n"
LEGACY = "import torch_xla.core.xla_model as xm\n\n\n" + "".join(STEP.format(n=n) for n in range(120))


def _tree(tmp_path: Path, files: int = 120) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    for number in range(files):
        (tree / f"train_{number:03}.py").write_text(LEGACY, encoding="utf-8")
    return tree


def _start(tree: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # A session of its own: the signals go to the run alone, and whatever is left can be ended as a group.
    return subprocess.Popen([sys.executable, "-m", "neuron_migrate", "rewrite", "--no-cache", "--jobs", "2", str(tree)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def children(pid: int) -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out.update(int(child) for child in (task / "children").read_text().split())
        except OSError:
            continue
    return out


def alive(pid: int) -> bool:
    """Running, or stopped; a zombie is gone (whoever reaps it, the work is over)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _busy_workers(parent: subprocess.Popen, count: int = 2, within: float = 60.0) -> set[int]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        assert parent.poll() is None, parent.stderr.read()
        workers = children(parent.pid)
        if len(workers) >= count:
            time.sleep(1.0)  # well into their first files
            return children(parent.pid)
        time.sleep(0.05)
    raise AssertionError("the run started no workers")


def _gone_within(pids: set[int], seconds: float) -> set[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = {pid for pid in pids if alive(pid)}
        if not left:
            return left
        time.sleep(0.05)
    return {pid for pid in pids if alive(pid)}


def _end(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


@pytest.mark.slow
def test_sigterm_stops_the_run_its_workers_and_leaves_every_file_whole(tmp_path):
    tree = _tree(tmp_path)
    expected_tree = tmp_path / "one"
    expected_tree.mkdir()
    (expected_tree / "train.py").write_text(LEGACY, encoding="utf-8")
    run([expected_tree], load_config([expected_tree], jobs=1, cache=False), mode="write")
    expected = (expected_tree / "train.py").read_text(encoding="utf-8")
    assert expected != LEGACY

    parent = _start(tree)
    try:
        workers = _busy_workers(parent)
        sent = time.monotonic()
        parent.send_signal(signal.SIGTERM)
        _, stderr = parent.communicate(timeout=30)
        took = time.monotonic() - sent
        left = _gone_within(workers, 5.0)
    finally:
        _end(parent)
    assert parent.returncode == 143 and took < 5.0, (parent.returncode, took, stderr[-2000:])
    assert "terminated; every file is either untouched or fully written" in stderr and "Traceback" not in stderr
    assert not left, f"workers still running after the run ended: {sorted(left)}"
    texts = [path.read_text(encoding="utf-8") for path in tree.iterdir()]
    assert len(texts) == 120 and not list(tree.glob(f"*{TEMP_SUFFIX}"))
    assert all(text in (LEGACY, expected) for text in texts)
    assert LEGACY in texts  # the signal did stop the run


@pytest.mark.slow
def test_workers_end_when_their_parent_is_killed(tmp_path):
    """SIGKILL (the OOM killer) leaves the parent no chance to clean up: the workers must go by themselves."""
    parent = _start(_tree(tmp_path))
    try:
        workers = _busy_workers(parent)
        parent.kill()
        parent.wait(timeout=10)
        left = _gone_within(workers, 5.0)
    finally:
        _end(parent)
    assert not left, f"workers still running after their parent was killed: {sorted(left)}"


@pytest.mark.slow
@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_the_pool_works_with_every_start_method(monkeypatch, method):
    # Under forkserver a worker's parent is the server process, not this one: the worker must not take that for
    # its parent having ended.
    import multiprocessing

    from neuron_migrate.migrate import parallel

    context = multiprocessing.get_context(method)
    monkeypatch.setattr(multiprocessing, "get_context", lambda method=method, real=multiprocessing.get_context:
                        real(method))
    results = list(parallel.map_in_order(abs, list(range(-6, 0)), 2, dict, lost=lambda task, why: why))
    assert results == [6, 5, 4, 3, 2, 1]
    assert not context.active_children() and not multiprocessing.active_children()
