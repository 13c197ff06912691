"""``verify``'s usage errors: each exits 2 with one line that names the option, before either side starts, and a
relative path given to an option means what it means where the command was typed."""

from __future__ import annotations

import os
import stat
import sys

import pytest
from typer.testing import CliRunner

from neuron_migrate.cli import app
from conftest import run_cli


@pytest.fixture
def scripts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print('trained')\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("", encoding="utf-8")
    (tmp_path / "folder").mkdir()
    return tmp_path


@pytest.mark.parametrize("options, message", [
    (["--rtol", "nan"], "--rtol nan: a tolerance is a finite number, 0 or more"),
    (["--rtol", "-1e-3"], "--rtol -0.001: a tolerance is a finite number, 0 or more"),
    (["--rtol", "inf"], "--rtol inf: a tolerance is a finite number, 0 or more"),
    (["--steps", "0"], "--steps 0: run at least 1 step"),
    (["--nproc", "0"], "--nproc 0: run at least 1 rank"),
    (["--legacy-nproc", "-2"], "--legacy-nproc -2: run at least 1 rank"),
    (["--no-launcher", "--nproc", "2"], "--no-launcher runs one rank per side: drop --nproc / --legacy-nproc"),
    (["--timeout", "0"], "--timeout 0: give a number of seconds above 0"),
    (["--legacy-args", "--name 'unclosed"], "--legacy-args \"--name 'unclosed\": No closing quotation"),
    (["--legacy-env", "XLA_USE_BF16"], "--legacy-env 'XLA_USE_BF16': expected NAME=VALUE"),
    (["--env", "=1"], "--env '=1': expected NAME=VALUE"),
    (["--report", "out.txt"], "--report out.txt: the report is .json, .md or .html"),
    (["--report", "missing/out.json"], "--report missing/out.json: no such folder: missing"),
    (["--report", "folder.json"], "--report folder.json: is a folder, name a file in it"),
    (["--keep-records", "notes.txt"], "--keep-records notes.txt: is a file, name a folder"),
    (["--legacy-python", "no-such-python-here"], "--legacy-python no-such-python-here: no such interpreter"),
    (["--legacy-python", "./notes.txt"], "--legacy-python ./notes.txt: not executable"),
    (["--legacy-python", "./folder"], "--legacy-python ./folder: no such interpreter"),
])
def test_a_bad_option_is_one_line_and_exit_2(scripts, options, message):
    (scripts / "folder.json").mkdir()

    result = CliRunner().invoke(app, ["verify", "train.py", "train.py", *options])

    assert result.exit_code == 2, result.output
    assert result.stderr == f"neuron-migrate: error: {message}\n"
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_a_missing_script_is_one_line_and_exit_2(scripts):
    result = CliRunner().invoke(app, ["verify", "train.py", "gone/train.py"])

    assert result.exit_code == 2
    assert result.stderr == "neuron-migrate: error: no such file or folder: gone/train.py\n"


@pytest.mark.slow
def test_a_relative_legacy_python_is_found_from_where_verify_was_typed(tmp_path):
    # the sides run in their scripts' folders: the interpreter must still be the one named from here
    (tmp_path / "legacy").mkdir()
    (tmp_path / "migrated").mkdir()
    program = "import torch\ntorch.nn.Linear(2, 1).to({0!r})(torch.ones(2, device={0!r}))\n"
    for side, device in (("legacy", "cpu"), ("migrated", "neuron")):
        (tmp_path / side / "infer.py").write_text(program.format(device), encoding="utf-8")
    launcher = tmp_path / "env" / "bin" / "python"
    launcher.parent.mkdir(parents=True)
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n", encoding="utf-8")
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)

    run = run_cli("verify", "legacy/infer.py", "migrated/infer.py", "--legacy-python", "env/bin/python",
               "--format", "json", cwd=tmp_path)

    assert run.returncode == 0, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    assert f'"{os.fspath(launcher)}"' in run.stdout, "the command shows the interpreter's absolute path"
