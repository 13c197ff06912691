"""The rendered --help of every command, against a snapshot: flags read `--diff`, values `PATH` / `TEXT`,
arguments `PATHS...`, as in other typer and click tools.

Regenerate after a deliberate change with ``UPDATE_SNAPSHOTS=1 python -m pytest tests/test_cli_help.py``
and read the diff."""

from __future__ import annotations

import os
import re

import pytest
from typer.testing import CliRunner

from conftest import ROOT
from neuron_migrate.cli import app

SNAPSHOTS = ROOT / "tests" / "snapshots" / "help"
COMMANDS = ["", "rewrite", "audit", "rules", "emulate", "verify"]


def _help(command: str) -> str:
    runner = CliRunner()
    args = [command, "--help"] if command else ["--help"]
    result = runner.invoke(app, args, env={"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}, terminal_width=100)
    assert result.exit_code == 0, result.output
    return "\n".join(line.rstrip() for line in result.output.splitlines()) + "\n"


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c or "main")
def test_help_matches_its_snapshot(command):
    text = _help(command)
    snapshot = SNAPSHOTS / f"{command or 'main'}.txt"
    if os.environ.get("UPDATE_SNAPSHOTS"):
        snapshot.write_text(text, encoding="utf-8")
    assert text == snapshot.read_text(encoding="utf-8")


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c or "main")
def test_help_names_values_as_other_cli_tools_do(command):
    text = _help(command)
    assert not re.search(r"<[a-z][^>]*>", text), "metavars like <bool> or <list[Path]>"
    assert "{" not in text.split("Usage:")[1].splitlines()[0], "usage line like {paths}..."


def test_short_flags_for_help_and_version():
    runner = CliRunner()
    assert runner.invoke(app, ["-h"]).exit_code == 0
    version = runner.invoke(app, ["-V"])
    assert version.exit_code == 0 and version.output.startswith("neuron-migrate ")
    assert "Usage: neuron-migrate rewrite" in runner.invoke(app, ["rewrite", "-h"]).output
