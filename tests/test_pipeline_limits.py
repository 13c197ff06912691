"""Per-file size and time limits: a file over one is skipped with its reason, and the run goes on."""

from __future__ import annotations

import json
import multiprocessing
import time

import pytest
from typer.testing import CliRunner

from neuron_migrate.cli import app
from neuron_migrate.config import Config, ConfigError, load_config, parse_size
from neuron_migrate.migrate import parallel, sources
from neuron_migrate.migrate.runner import run

LEGACY = "import torch_xla.core.xla_model as xm\n\n\ndef step(loss):\n    loss.backward()\n    xm.mark_step()\n"


def by_path(report) -> dict[str, tuple[str, str]]:
    return {f.path: (f.status, f.error) for f in report.files}


def _generated(rows: int) -> str:
    """A generated module: one long line of data after a legacy import."""
    return LEGACY + "TABLE = {" + ", ".join(f"'k{i}': [{i}, 'v{i}']" for i in range(rows)) + "}\n"


def test_a_file_with_more_code_than_the_limit_is_skipped_with_its_size_and_the_run_goes_on(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(LEGACY)
    (tmp_path / "table.py").write_text(_generated(300))  # about 6.5 KB
    (tmp_path / "clean.py").write_text("DATA = [" + "1, " * 5000 + "]\n")  # large too, but nothing to migrate
    before = (tmp_path / "table.py").read_text()
    report = run([tmp_path], load_config([tmp_path], cache=False, max_file_size=4000), mode="write")
    files = by_path(report)
    assert files["train.py"][0] == "changed" and files["clean.py"] == ("unchanged", "")
    status, error = files["table.py"]
    assert status == "skipped" and (tmp_path / "table.py").read_text() == before
    assert error == ("6.7 KB of code, over the per-file size limit of 4 KB "
                     "(--max-file-size, or max-file-size in [tool.neuron-migrate])")
    assert report.exit_code() == 1  # the skipped file does not fail the run; train.py changed


def test_a_notebook_is_measured_by_its_code_not_its_outputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    image = "iVBOR" + "A" * 20_000
    cell = {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": LEGACY.splitlines(keepends=True),
            "outputs": [{"output_type": "display_data", "data": {"image/png": image}, "metadata": {}}]}
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "explore.ipynb").write_text(json.dumps(notebook, indent=1))
    report = run([tmp_path], load_config([tmp_path], cache=False, max_file_size=4000), mode="check")
    assert by_path(report)["explore.ipynb"][0] == "changed"


def test_no_size_limit_with_zero(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "table.py").write_text(_generated(300))
    report = run([tmp_path], load_config([tmp_path], cache=False, max_file_size=0), mode="check")
    assert by_path(report)["table.py"][0] == "changed"


def _stall_on(name: str, monkeypatch) -> None:
    """The Python adapter, made to hang (in Python code, as a slow rule does) on the file ``name``."""
    real = sources.ADAPTERS["python"]

    def stalling(data, path, plan, no_comments):
        if path.endswith(name):
            while True:
                time.sleep(0.01)
        return real(data, path, plan, no_comments)

    monkeypatch.setitem(sources.ADAPTERS, "python", stalling)


def test_a_file_past_the_time_limit_is_skipped_in_process_and_the_others_are_done(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("a.py", "stuck.py", "z.py"):
        (tmp_path / name).write_text(LEGACY)
    _stall_on("stuck.py", monkeypatch)
    started = time.monotonic()
    report = run([tmp_path], load_config([tmp_path], jobs=1, cache=False, max_file_seconds=0.3), mode="write")
    assert time.monotonic() - started < 10
    files = by_path(report)
    assert files["a.py"][0] == files["z.py"][0] == "changed"
    assert files["stuck.py"] == ("skipped", "took more than 0.3 s, the per-file time limit "
                                            "(--max-file-seconds, or max-file-seconds in [tool.neuron-migrate])")
    assert (tmp_path / "stuck.py").read_text() == LEGACY


@pytest.mark.slow
@pytest.mark.skipif(multiprocessing.get_start_method() != "fork", reason="the stall is patched into forked workers")
def test_a_worker_stuck_past_the_time_limit_is_replaced_and_the_other_files_are_done(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(parallel, "POOL_PAYS_SECONDS", 0.0)
    for i in range(8):
        (tmp_path / f"m{i}.py").write_text(LEGACY)
    _stall_on("m2.py", monkeypatch)
    started = time.monotonic()
    report = run([tmp_path], load_config([tmp_path], jobs=2, cache=False, max_file_seconds=1.0), mode="check")
    assert time.monotonic() - started < 20
    files = by_path(report)
    assert files.pop("m2.py")[0] == "skipped"
    assert {status for status, _ in files.values()} == {"changed"} and len(files) == 7
    assert not multiprocessing.active_children()


def test_the_cli_reports_a_skipped_file_and_its_reason(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "table.py").write_text(_generated(300))
    result = CliRunner().invoke(app, ["rewrite", "--check", "--no-cache", "--max-file-size", "4KB", "--report",
                                      "out.json", "."])
    assert result.exit_code == 0, result.output
    assert "table.py: skipped: 6.7 KB of code, over the per-file size limit of 4 KB" in result.output
    (entry,) = json.loads((tmp_path / "out.json").read_text())["files"]
    assert entry["status"] == "skipped" and entry["error"].startswith("6.7 KB of code")


@pytest.mark.parametrize(("flag", "value"), [("--max-file-size", "1 lot"), ("--max-file-size", "-5"),
                                             ("--max-file-seconds", "-1"), ("--max-file-seconds", "soon")])
def test_a_bad_limit_on_the_command_line_is_a_usage_error(tmp_path, monkeypatch, flag, value):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["rewrite", "--check", flag, value, "."])
    assert result.exit_code == 2 and flag in result.output and "Traceback" not in result.output


def test_the_limits_come_from_pyproject_and_the_flags_win(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.neuron-migrate]\nmax-file-size = "500KB"\nmax-file-seconds = 5\n'
                                             "write-read-only = true\n")
    config = load_config([tmp_path])
    assert (config.max_file_size, config.max_file_seconds, config.write_read_only) == (500_000, 5.0, True)
    config = load_config([tmp_path], max_file_size=0, max_file_seconds=0.5)
    assert (config.max_file_size, config.max_file_seconds) == (0, 0.5)
    defaults = Config()
    assert (defaults.max_file_size, defaults.max_file_seconds, defaults.write_read_only) == (1_000_000, 60.0, False)


@pytest.mark.parametrize(("key", "value"), [("max-file-size", '"big"'), ("max-file-size", "-1"),
                                            ("max-file-seconds", '"60"'), ("max-file-seconds", "-2"),
                                            ("write-read-only", "1")])
def test_a_bad_limit_in_pyproject_names_the_key(tmp_path, key, value):
    (tmp_path / "pyproject.toml").write_text(f"[tool.neuron-migrate]\n{key} = {value}\n")
    with pytest.raises(ConfigError, match=key):
        load_config([tmp_path])


def test_the_limits_do_not_change_the_cache_fingerprint():
    assert Config().fingerprint() == Config(max_file_size=10, max_file_seconds=1.0, write_read_only=True).fingerprint()


@pytest.mark.parametrize(("text", "size"), [("1500", 1500), ("1MB", 1_000_000), ("1.5 mb", 1_500_000),
                                            ("500KB", 500_000), ("1MiB", 1_048_576), ("0", 0), (2048, 2048)])
def test_sizes_are_read_with_their_unit(text, size):
    assert parse_size(text) == size


def _native_stall(task):
    """Stands for native code (LibCST's parser on a huge module): no signal handler of this process runs."""
    import signal

    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGINT})
    time.sleep(30)
    return task


@pytest.mark.slow
@pytest.mark.skipif(multiprocessing.get_start_method() != "fork", reason="the stall is a function of this test file")
def test_a_long_task_runs_in_a_worker_that_can_be_stopped_even_with_one_job():
    started = time.monotonic()
    results = list(parallel.map_in_order(_native_stall, ["huge.py"], 1, lambda: None, cost=lambda task: 90.0,
                                         time_limit=0.5, lost=lambda task, why: (task, why)))
    assert results == [("huge.py", parallel.TIMED_OUT)]
    assert time.monotonic() - started < 10
    assert not multiprocessing.active_children()


def test_the_audit_takes_the_limits_for_its_legacy_pass(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "table.py").write_text(_generated(300))
    result = CliRunner().invoke(app, ["audit", "--no-cache", "--max-file-size", "4KB", "--format", "json", "."])
    (entry,) = json.loads(result.stdout)["files"]
    assert (entry["status"], entry["error"][:14]) == ("skipped", "6.7 KB of code")
