"""The two test lanes: the default one leaves the slow tests out, and the README's test command, which CI runs,
runs both."""

from __future__ import annotations

import re
import shlex
import tomllib

from conftest import ROOT

README_COMMAND = re.compile(r"^pip install torch.*$", re.MULTILINE)


def _readme_test_command() -> str:
    commands = README_COMMAND.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(commands) == 1, "the README should show one test command"
    return commands[0]


def _pytest_runs(command: str) -> list[list[str]]:
    """The argument lists of the ``python -m pytest`` runs of a ``&&`` chain."""
    runs = [shlex.split(part) for part in command.split("&&")]
    return [run[3:] for run in runs if run[:3] == ["python", "-m", "pytest"]]


def test_ci_runs_exactly_the_readme_test_command():
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert script[-1] == _readme_test_command()


def test_the_default_lane_leaves_out_the_slow_tests():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    addopts = shlex.split(options["addopts"])
    assert addopts[addopts.index("-m") + 1] == "not slow"
    assert any(marker.startswith("slow:") for marker in options["markers"])


def test_the_readme_test_command_runs_both_lanes():
    lanes = [run[run.index("-m") + 1] if "-m" in run else "default" for run in _pytest_runs(_readme_test_command())]
    assert lanes == ["default", "slow"]
