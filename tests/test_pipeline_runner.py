"""A whole run: what is written in each mode, how failures are reported, and that the result does not
depend on parallelism or on the run."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from neuron_migrate import __version__
from neuron_migrate.config import load_config
from neuron_migrate.migrate import engine, parallel, runner, sources
from neuron_migrate.migrate.runner import run

LEGACY = "import torch_xla.core.xla_model as xm\n\n\ndef step(loss):\n    loss.backward()\n    xm.mark_step()\n"
MIGRATED = "def step(loss):\n    loss.backward()\n"
UNKNOWN = "import torch_xla.core.xla_model as xm\n\nkind = xm.xla_device_kind()\n"

needs_symlinks = pytest.mark.skipif(os.name == "nt", reason="POSIX symlinks")


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = {
        "train.py": LEGACY,
        "pkg/model.py": UNKNOWN,
        "pkg/clean.py": "import torch\n",
        "pkg/broken.py": "import torch_xla\nx = (\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.py"))}


def statuses(report) -> dict[str, str]:
    return {f.path: f.status for f in report.files}


@pytest.mark.parametrize("mode", ["check", "diff"])
def test_check_and_diff_write_nothing(project, mode):
    before = snapshot(project)
    report = run([project], load_config([project]), mode=mode)
    assert snapshot(project) == before
    assert statuses(report) == {
        "pkg/broken.py": "failed",
        "pkg/clean.py": "unchanged",
        "pkg/model.py": "changed",
        "train.py": "changed",
    }
    train = next(f for f in report.files if f.path == "train.py")
    assert train.diff.startswith("--- a/train.py\n+++ b/train.py\n")
    assert report.exit_code() == 2


def test_write_mode_rewrites_and_reports(project):
    progress = []
    report = run([project], load_config([project]), mode="write", progress=lambda *a: progress.append(a))
    assert (project / "train.py").read_text() == MIGRATED
    assert "TODO(neuron-migrate NM100)" in (project / "pkg/model.py").read_text()
    assert report.command == "rewrite" and report.mode == "write" and report.tool_version == __version__
    assert {"NM100", "NM110", "NM190"} <= set(report.rules)
    assert report.rules["NM110"]["safety"] == "safe"
    assert report.duration_seconds > 0
    # The bar names the file being worked on: after an engine result, the one whose result comes next.
    assert set(p for _, _, p in progress) - {""} <= {f.path for f in report.files}
    assert [(d, t) for d, t, _ in progress] == [(i, 4) for i in range(1, 5)]
    assert progress[-1][2] == ""  # nothing is being worked on once the last result is in
    # A second run finds nothing more to change (the TODO marker is not a change).
    again = run([project], load_config([project]), mode="check")
    assert statuses(again)["train.py"] == "unchanged" and statuses(again)["pkg/model.py"] == "unchanged"


def test_parse_error_is_reported_with_location_and_file_untouched(project):
    report = run([project / "pkg" / "broken.py"], load_config([project]), mode="write")
    [result] = report.files
    assert result.status == "failed"
    assert result.path == "pkg/broken.py"
    assert result.error == "2:5: syntax error: '(' was never closed; file left unchanged"
    assert (project / "pkg" / "broken.py").read_text() == "import torch_xla\nx = (\n"
    assert report.exit_code() == 2


def test_internal_error_names_the_rules_and_leaves_the_file(project, monkeypatch):
    def broken_rewrite(source, path, plan, **kwargs):
        raise engine.InternalError("rewrite by NM110 does not parse: invalid syntax")

    monkeypatch.setattr(engine, "migrate_python", broken_rewrite)
    report = run([project / "train.py"], load_config([project], jobs=1, cache=False), mode="write")
    [result] = report.files
    assert result.status == "failed" and "NM110" in result.error and result.error.startswith("internal error: ")
    assert (project / "train.py").read_text() == LEGACY


def test_a_crash_in_a_rule_fails_only_that_file(project, monkeypatch):
    real = engine.migrate_python

    def flaky(source, path, plan, **kwargs):
        if path == "train.py":
            raise AttributeError("'NoneType' object has no attribute 'value'")
        return real(source, path, plan, **kwargs)

    monkeypatch.setattr(engine, "migrate_python", flaky)
    report = run([project], load_config([project], jobs=1, cache=False), mode="check")
    assert statuses(report)["train.py"] == "failed"
    assert "AttributeError" in next(f.error for f in report.files if f.path == "train.py")
    assert statuses(report)["pkg/model.py"] == "changed"


def test_missing_path_fails_the_run(project):
    report = run([project / "nope.py"], load_config([project]), mode="check")
    assert statuses(report) == {"nope.py": "failed"} and report.exit_code() == 2


def test_unreadable_file_is_a_failure(project, monkeypatch):
    real_open = open

    def deny(path, *args, **kwargs):
        if str(path).endswith("train.py"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(runner, "open", deny, raising=False)
    report = run([project], load_config([project]), mode="check")
    assert statuses(report)["train.py"] == "failed"
    assert next(f.error for f in report.files if f.path == "train.py") == "cannot be read: Permission denied"


def test_paths_outside_the_working_directory_are_absolute(project, tmp_path_factory, monkeypatch):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir(elsewhere)
    report = run([project / "train.py"], load_config([project]), mode="check")
    assert report.files[0].path == (project / "train.py").as_posix()


def test_gitignored_and_environment_folders_are_skipped(project):
    (project / ".gitignore").write_text("generated/\n")
    for folder in ("generated", "venv", ".venv"):
        (project / folder).mkdir()
        (project / folder / "old.py").write_text(LEGACY)
    (project / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    report = run([project], load_config([project]), mode="write")
    assert not any(f.path.startswith(("generated", "venv", ".venv")) for f in report.files)
    for folder in ("generated", "venv", ".venv"):
        assert (project / folder / "old.py").read_text() == LEGACY


@needs_symlinks
def test_symlink_outside_the_tree_is_skipped_and_not_written(project, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside") / "shared.py"
    outside.write_text(LEGACY)
    os.symlink(outside, project / "pkg" / "shared.py")
    report = run([project / "pkg"], load_config([project]), mode="write")
    result = next(f for f in report.files if f.path == "pkg/shared.py")
    assert result.status == "skipped" and "outside the tree" in result.error
    assert outside.read_text() == LEGACY


@needs_symlinks
def test_symlink_inside_the_tree_writes_through_and_stays_a_link(project):
    (project / "vendor").mkdir()
    target = project / "vendor" / "real.py"
    target.write_text(LEGACY)
    (project / ".gitignore").write_text("vendor/\n")
    link = project / "pkg" / "linked.py"
    os.symlink(target, link)
    report = run([project], load_config([project]), mode="write")
    assert statuses(report)["pkg/linked.py"] == "changed"
    assert link.is_symlink() and target.read_text() == MIGRATED


@pytest.mark.slow
def test_pool_and_inline_give_identical_bytes_and_reports(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sources = {}
    for i in range(12):
        body = LEGACY if i % 3 else UNKNOWN
        sources[f"m{i:02}.py"] = f"# file {i}\n{body}x{i} = {i}\n"
    results = {}
    for jobs in (1, 2):
        tree = tmp_path / f"jobs{jobs}"
        tree.mkdir()
        for name, text in sources.items():
            (tree / name).write_text(text)
        monkeypatch.chdir(tree)
        report = run([tree], load_config([tree], jobs=jobs, cache=False), mode="write")
        results[jobs] = (snapshot(tree), [f.to_dict() for f in report.files])
    assert results[1] == results[2]
    assert sum(1 for f in results[2][1] if f["status"] == "changed") == 12


@pytest.mark.slow
@pytest.mark.skipif(multiprocessing.get_start_method() != "fork", reason="the crash is patched into forked workers")
def test_a_dying_worker_fails_its_files_not_the_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(parallel, "POOL_PAYS_SECONDS", 0.0)  # eight small files: a pool however little they cost
    for i in range(8):
        (tmp_path / f"m{i}.py").write_text(LEGACY)
    real = sources.ADAPTERS["python"]

    def crash_on_m5(data, path, plan, no_comments):
        if path == "m5.py":
            os._exit(1)
        return real(data, path, plan, no_comments)

    monkeypatch.setitem(sources.ADAPTERS, "python", crash_on_m5)
    report = run([tmp_path], load_config([tmp_path], jobs=2, cache=False), mode="check")
    assert statuses(report)["m5.py"] == "failed"
    assert "worker process died" in next(f.error for f in report.files if f.path == "m5.py")
    assert len(report.files) == 8 and report.exit_code() == 2


def test_runs_are_deterministic(project):
    reports = [run([project], load_config([project], cache=False), mode="diff").to_dict() for _ in range(2)]
    for report in reports:
        report.pop("duration_seconds")
    assert reports[0] == reports[1]


def test_unknown_mode_is_rejected(project):
    with pytest.raises(ValueError, match="mode"):
        run([project], load_config([project]), mode="apply")


def test_the_pool_is_shut_down_and_waited_for_before_the_run_returns(tmp_path, monkeypatch):
    # A pool still shutting down when the interpreter exits races with its own clean-up, so a run must
    # leave no worker behind.
    import multiprocessing

    started = []
    real = parallel._Pool._start

    def recording(self):
        worker = real(self)
        started.append(worker.process)
        return worker

    monkeypatch.setattr(parallel._Pool, "_start", recording)
    monkeypatch.setattr(parallel, "POOL_PAYS_SECONDS", 0.0)
    for i in range(6):
        (tmp_path / f"train{i}.py").write_text(LEGACY)
    from neuron_migrate import audit

    run([tmp_path], load_config([tmp_path], jobs=2, cache=False), mode="check")
    audit.audit([tmp_path], load_config([tmp_path], jobs=2, cache=False))
    assert len(started) == 6  # two workers for the rewrite, for the audit's hazard scan and its legacy pass
    assert all(process.exitcode == 0 for process in started)  # each asked to stop, and waited for
    assert not multiprocessing.active_children()


def test_a_run_without_diffs_computes_none_and_its_cache_entries_do_not_serve_one(project, monkeypatch):
    from neuron_migrate.migrate import write

    aligned = []
    real = write.matching_blocks
    monkeypatch.setattr(write, "matching_blocks", lambda a, b: aligned.append(1) or real(a, b))
    config = load_config([project], jobs=1)
    quiet = run([project], config, mode="check", diffs=False)
    assert not aligned
    assert [f.diff for f in quiet.files] == ["", "", "", ""]
    assert statuses(quiet)["train.py"] == "changed"
    shown = run([project], config, mode="check")
    train = next(f for f in shown.files if f.path == "train.py")
    assert not train.cached and train.diff.startswith("--- a/train.py\n")
    again = run([project], config, mode="check", diffs=False)  # an entry with a diff serves a run without
    assert next(f for f in again.files if f.path == "train.py").cached


def test_a_pool_starts_only_when_the_estimated_work_pays_for_it():
    small, large = [b"x" * 500] * 3, [b"x" * 20_000] * 3
    def seconds(data):
        return 0.03 + 40e-6 * len(data)
    assert not parallel.pool_pays(small, 2, seconds)  # 0.16 s of work: the forks and cold caches cost as much
    assert parallel.pool_pays(large, 2, seconds)
    assert not parallel.pool_pays(large, 1, seconds)
    assert not parallel.pool_pays(large[:1], 2, seconds)
    assert parallel.pool_pays([b""] * parallel.MIN_POOL_TASKS, 2) and not parallel.pool_pays([b""] * 3, 2)


def test_a_run_of_a_few_small_files_stays_in_this_process(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a pool was started")

    monkeypatch.setattr(parallel._Pool, "__init__", refuse)
    for i in range(6):
        (tmp_path / f"train{i}.py").write_text(LEGACY)
    report = run([tmp_path], load_config([tmp_path], jobs=2, cache=False), mode="check")
    assert [f.status for f in report.files] == ["changed"] * 6
