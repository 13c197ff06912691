"""The content-hash cache: a second run does not parse, and anything that could change the outcome
(the file, the settings) invalidates the entry."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from neuron_migrate.config import load_config
from neuron_migrate.migrate import runner, sources
from neuron_migrate.migrate.cache import Cache

ROOT = Path(__file__).resolve().parents[1]
LEGACY = "import torch_xla.core.xla_model as xm\n\n\ndef step(loss):\n    loss.backward()\n    xm.mark_step()\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(LEGACY)
    (tmp_path / "clean.py").write_text("import torch\n")
    return tmp_path


@pytest.fixture
def engine_calls(monkeypatch):
    """Counts the files handed to the engine (runs are inline: jobs=1)."""
    calls: list[str] = []
    real = sources.ADAPTERS["python"]

    def counting(data, path, plan, no_comments):
        calls.append(path)
        return real(data, path, plan, no_comments)

    monkeypatch.setitem(sources.ADAPTERS, "python", counting)
    return calls


def check(project: Path, **config):
    return runner.run([project], load_config([project], jobs=1, **config), mode="check")


def test_second_run_is_served_from_the_cache(project, engine_calls):
    first = check(project)
    assert engine_calls == ["train.py"]  # clean.py never reaches the engine: no trigger word
    second = check(project)
    assert engine_calls == ["train.py"]
    assert [f.cached for f in second.files] == [False, True]
    assert [f.to_dict() | {"cached": None} for f in first.files] == [
        f.to_dict() | {"cached": None} for f in second.files
    ]


def test_cached_change_is_written_in_write_mode(project, engine_calls):
    check(project)
    report = runner.run([project], load_config([project], jobs=1), mode="write")
    assert engine_calls == ["train.py"] and report.files[1].cached
    assert (project / "train.py").read_text() == "def step(loss):\n    loss.backward()\n"


def test_changed_file_misses_the_cache(project, engine_calls):
    check(project)
    (project / "train.py").write_text(LEGACY + "x = 1\n")
    check(project)
    assert engine_calls == ["train.py", "train.py"]


@pytest.mark.parametrize("setting", [{"no_comments": True}, {"select": ["NM110"]}, {"ignore": ["NM100"]}])
def test_changed_settings_miss_the_cache(project, engine_calls, setting):
    check(project)
    check(project, **setting)
    assert engine_calls == ["train.py", "train.py"]


def test_no_cache_neither_reads_nor_writes(project, engine_calls, tmp_path_factory, monkeypatch):
    folder = tmp_path_factory.mktemp("empty-cache")
    monkeypatch.setenv("NEURON_MIGRATE_CACHE_DIR", str(folder))
    check(project, cache=False)
    check(project, cache=False)
    assert engine_calls == ["train.py", "train.py"]
    assert list(folder.iterdir()) == []


def test_corrupt_entries_are_ignored(project, engine_calls):
    check(project)
    folder = Path(os.environ["NEURON_MIGRATE_CACHE_DIR"])
    entries = [p for p in folder.rglob("*.json") if p.parent.name != "plans"]
    assert len(entries) == 1
    entries[0].write_bytes(b'{"status": "changed", "output": 12')
    report = check(project)
    assert engine_calls == ["train.py", "train.py"]
    assert report.files[1].status == "changed" and not report.files[1].cached


def test_unwritable_cache_folder_does_not_fail_the_run(project, engine_calls, monkeypatch):
    blocker = project / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("NEURON_MIGRATE_CACHE_DIR", str(blocker))
    assert check(project).exit_code() == 1


def test_key_depends_on_content_path_and_salt():
    cache = Cache.for_run(Path("unused"), "config-a", ("NM100", "NM110"))
    key = cache.key("a.py", b"x")
    assert key == cache.key("a.py", b"x")
    assert key != cache.key("a.py", b"y")
    assert key != cache.key("b.py", b"x")
    assert key != Cache.for_run(Path("unused"), "config-b", ("NM100", "NM110")).key("a.py", b"x")
    assert key != Cache.for_run(Path("unused"), "config-a", ("NM100",)).key("a.py", b"x")



def test_key_depends_on_the_words_of_the_files_kind_only():
    words = {"python": (b"torch_xla",), "shell": (b"torchrun",), "*": (b"torch_xla", b"torchrun")}
    cache = Cache.for_run(Path("unused"), "config-a", ("NM100",), words)
    key = cache.key("a.py", b"x", kind="python")
    more_python = Cache.for_run(Path("unused"), "config-a", ("NM100",), {**words, "python": (b"torch_xla", b"xm")})
    more_shell = Cache.for_run(Path("unused"), "config-a", ("NM100",), {**words, "shell": (b"torchrun", b"python")})
    assert key != more_python.key("a.py", b"x", kind="python")
    assert key == more_shell.key("a.py", b"x", kind="python")
    assert cache.key("run.sh", b"x", kind="shell") != more_shell.key("run.sh", b"x", kind="shell")
    # a kind without its own list is keyed by the union, like its scan
    assert cache.key("x", b"x", kind="other") == cache.key("x", b"x", kind="*")


PROBE = """
import sys
from neuron_migrate.config import load_config
from neuron_migrate.migrate.runner import run

report = run([sys.argv[1]], load_config([sys.argv[1]], jobs=1), mode="check")
print(report.exit_code(), "libcst" in sys.modules, sorted(report.rules)[:1])
"""


@pytest.mark.slow
def test_clean_or_cached_runs_do_not_import_libcst(project):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}

    def probe() -> str:
        args = [sys.executable, "-c", PROBE, str(project)]
        done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert probe() == "1 True ['NM100']"  # first run: the rules are loaded and train.py is parsed
    assert probe() == "1 False ['NM100']"  # everything from the cache, rule metadata included


def test_a_launch_script_misses_the_cache_when_the_script_it_launches_changes(project):
    # Whether `torchrun train.py` is a Hugging Face job (and needs HF_DEACTIVATE_ASYNC_LOAD) is
    # read from train.py, so the cached result of run.sh must not outlive an edit of train.py.
    (project / "run.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node 2 train.py\n")
    (project / "train.py").write_text("import torch_xla\n")
    first = {f.rule for f in check(project).findings if f.path == "run.sh"}
    (project / "train.py").write_text("import torch_xla\nfrom transformers import Trainer\n")
    second = {f.rule for f in check(project).findings if f.path == "run.sh"}
    assert "NM511" not in first and "NM511" in second


def test_a_loading_script_misses_the_cache_when_a_file_around_it_changes(project):
    # Whether serve.py loads a traced Neuron model is read from the script that saved the file, so
    # the cached result of serve.py must not outlive an edit of that script.
    (project / "serve.py").write_text('import torch\n\nmodel = torch.jit.load("model.pt")\n')
    (project / "export.py").write_text("import torch\n")
    first = {f.rule for f in check(project).findings if f.path == "serve.py"}
    (project / "export.py").write_text(
        'import torch\nimport torch_neuronx\n\ntorch.jit.save(torch_neuronx.trace(model, x), "model.pt")\n'
    )
    second = {f.rule for f in check(project).findings if f.path == "serve.py"}
    assert "NM402" not in first and "NM402" in second


def test_the_launched_files_of_a_notebook_with_a_large_image_are_found_in_linear_time(tmp_path):
    import time

    from neuron_migrate.migrate.cache import launched_sources

    (tmp_path / "train.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "eval.py").write_text("y = 2\n", encoding="utf-8")
    image = b"iVBORw0KGgoAAAANSUhEUgAA/" * 8000  # one 200 KB run of path characters, as base64 output is
    notebook = b'{"source": ["!python train.py --x 1"], "data": "' + image + b'", "s": "!python -m eval"}'
    started = time.perf_counter()
    found = launched_sources(str(tmp_path / "nb.ipynb"), notebook)
    assert time.perf_counter() - started < 0.5  # minutes when every position of the run was tried to its end
    assert found.startswith(b"eval.py\0") and b"\0train.py\0" in found
