"""Input the rewrite must not take as it is: read-only files, UTF-16/UTF-32 text, NUL bytes. Each gets a clear
word (skipped with its reason, or an error with its place), never a silent pass or an internal error."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest
from typer.testing import CliRunner

from conftest import ROOT
from neuron_migrate.cli import app
from neuron_migrate.config import load_config
from neuron_migrate.migrate import sources
from neuron_migrate.migrate.runner import run

LEGACY = "import torch_xla.core.xla_model as xm\n\n\ndef step(loss):\n    loss.backward()\n    xm.mark_step()\n"
MIGRATED = "def step(loss):\n    loss.backward()\n"


def by_path(report) -> dict[str, tuple[str, str]]:
    return {f.path: (f.status, f.error) for f in report.files}


# ----- read-only files ---------------------------------------------------------------------------------------
@pytest.fixture
def read_only_tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "locked.py").write_text(LEGACY)
    (tmp_path / "locked_clean.py").write_text("import torch\n")
    (tmp_path / "open.py").write_text(LEGACY)
    for name in ("locked.py", "locked_clean.py"):
        os.chmod(tmp_path / name, 0o444)
    yield tmp_path
    for path in tmp_path.glob("*.py"):
        os.chmod(path, 0o644)


def test_a_read_only_file_is_left_untouched_and_reported(read_only_tree):
    report = run([read_only_tree], load_config([read_only_tree], cache=False), mode="write")
    files = by_path(report)
    status, error = files["locked.py"]
    assert status == "skipped" and error.startswith("read-only (no write permission): left unchanged")
    assert "--write-read-only" in error
    assert (read_only_tree / "locked.py").read_text() == LEGACY
    assert files["locked_clean.py"] == ("unchanged", "")  # nothing to write: nothing to say
    assert files["open.py"][0] == "changed" and (read_only_tree / "open.py").read_text() == MIGRATED
    assert not next(f for f in report.files if f.path == "locked.py").findings  # no edit claimed that was not made


def test_check_mode_reports_what_a_read_only_file_would_become(read_only_tree):
    report = run([read_only_tree], load_config([read_only_tree], cache=False), mode="check")
    assert by_path(report)["locked.py"][0] == "changed"


def test_write_read_only_rewrites_it_and_keeps_its_permissions(read_only_tree):
    report = run([read_only_tree], load_config([read_only_tree], cache=False, write_read_only=True), mode="write")
    assert by_path(report)["locked.py"][0] == "changed"
    assert (read_only_tree / "locked.py").read_text() == MIGRATED
    assert stat.S_IMODE(os.stat(read_only_tree / "locked.py").st_mode) == 0o444


def test_the_cli_says_a_read_only_file_was_skipped_and_the_flag_rewrites_it(read_only_tree):
    result = CliRunner().invoke(app, ["rewrite", "--no-cache", "locked.py"])
    assert result.exit_code == 0, result.output
    assert "locked.py: skipped: read-only (no write permission)" in result.output
    result = CliRunner().invoke(app, ["rewrite", "--no-cache", "--write-read-only", "locked.py"])
    assert result.exit_code == 1 and (read_only_tree / "locked.py").read_text() == MIGRATED


# ----- UTF-16 and UTF-32 -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "encoding", "reason"), [
    ("bom.py", "utf-16", "UTF-16 text (with a byte order mark)"),
    ("little.py", "utf-16-le", "UTF-16 text (without a byte order mark)"),
    ("big.py", "utf-16-be", "UTF-16 text (without a byte order mark)"),
    ("wide.py", "utf-32", "UTF-32 text (with a byte order mark)"),
    ("wide_le.py", "utf-32-le", "UTF-32 text (without a byte order mark)"),
    ("requirements.txt", "utf-16", "UTF-16 text (with a byte order mark)"),  # PowerShell's `pip freeze >`
])
def test_a_utf16_or_utf32_file_is_skipped_saying_it_was_not_read(tmp_path, monkeypatch, name, encoding, reason):
    monkeypatch.chdir(tmp_path)
    text = "torch-xla\ntorch-neuronx==1.13.1\n" if name.endswith(".txt") else LEGACY
    (tmp_path / name).write_bytes(text.encode(encoding))
    report = run([tmp_path], load_config([tmp_path], cache=False), mode="write")
    assert by_path(report)[name] == ("skipped", f"{reason}: not read; neuron-migrate reads UTF-8 (or what a coding "
                                                "comment names): re-save it as UTF-8")
    assert (tmp_path / name).read_bytes() == text.encode(encoding)


def test_utf8_text_with_a_few_accents_is_not_taken_for_utf16():
    assert sources.wide_encoding(("# café résumé naïve\n" + LEGACY).encode()) is None
    assert sources.wide_encoding(b"") is None and sources.wide_encoding(b"\x00") is None


# ----- NUL bytes -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "text", "place"), [
    ("code.py", "import torch_xla.core.xla_model as xm\nx = 1\x00\nxm.mark_step()\n", "2:6"),
    ("comment.py", "import torch_xla.core.xla_model as xm\n# note\x00\nxm.mark_step()\n", "2:7"),
    ("string.py", 'import torch_xla.core.xla_model as xm\ns = "a\x00b"\nxm.mark_step()\n', "2:7"),
])
def test_a_nul_byte_is_the_input_s_fault_with_its_place(tmp_path, monkeypatch, name, text, place):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(text)
    report = run([tmp_path], load_config([tmp_path], cache=False), mode="write")
    status, error = by_path(report)[name]
    assert status == "failed"
    assert error == (f"{place}: a NUL byte (\\x00), which source code cannot hold (a binary file, or one "
                     "written only in part?); file left unchanged")
    assert (tmp_path / name).read_text() == text


def test_a_nul_byte_in_a_notebook_cell_names_the_cell_line_and_column(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": ["import torch_xla.core.xla_model as xm\n", "x = 1\x00\n"]}
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4,
                                                   "nbformat_minor": 5}))
    report = run([tmp_path], load_config([tmp_path], cache=False), mode="check")
    (finding,) = [f for f in report.findings if f.rule == "NM550"]
    assert (finding.cell, finding.span.line, finding.span.column) == (1, 2, 6)
    assert "a NUL byte" in finding.message


def test_an_internal_error_names_the_code_by_its_package_not_where_it_is_installed():
    def broken():
        import libcst

        libcst.parse_module(None)  # a bug: fails inside LibCST

    error = sources.guarded(broken).error
    assert error.startswith("internal error: ") and "(at libcst/" in error
    assert sys.prefix not in error and str(ROOT) not in error


def test_the_audit_says_the_same(tmp_path, monkeypatch):
    from neuron_migrate import audit

    monkeypatch.chdir(tmp_path)
    (tmp_path / "wide.py").write_bytes(LEGACY.encode("utf-16"))
    (tmp_path / "nul.py").write_text("import torch\nx = torch.ones(1)\x00\n")
    files = by_path(audit.audit([tmp_path], load_config([tmp_path], cache=False)))
    assert files["wide.py"][0] == "skipped" and files["wide.py"][1].startswith("UTF-16 text (with a byte order mark)")
    assert files["nul.py"][0] == "failed" and files["nul.py"][1].startswith("2:18: a NUL byte (\\x00)")
