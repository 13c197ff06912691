"""Every file kind goes through one outcome path: a file that cannot be rewritten fails alone, with its
place and one wording, and keeps its bytes; a bug in a rule costs that one file."""

from __future__ import annotations

import pytest

from neuron_migrate.migrate import sources
from neuron_migrate.migrate.sources import ADAPTERS
from neuron_migrate.report.model import FAILED, MANUAL, REVIEW, SAFE
from neuron_migrate.ruleapi import RuleMeta
from neuron_migrate.ruleapi.reporter import Reporter, marker_comment

BAD_FILES = [
    ("python", "train.py", b"def f(:\n    pass\n", "1:7: syntax error"),
    ("python", "train.py", b"x = 1\ny = '\xff'\n", "2:6: byte 0xff is not valid utf-8"),
    ("notebook", "nb.ipynb", b'{"cells": [', "1:12: not valid JSON"),
    ("shell", "run.sh", b"echo ok\necho '\xfe'\n", "2:7: byte 0xfe is not valid utf-8"),
    ("dockerfile", "Dockerfile", b"# escape=`\nFROM x\n", "1:1: the escape=` parser directive"),
    ("requirements", "requirements.txt", b"torch\n\xff\n", "2:1: byte 0xff is not valid utf-8"),
    ("pyproject", "pyproject.toml", b"[project\n", "1:8: invalid TOML"),
]


@pytest.mark.parametrize(("kind", "path", "data", "start"), BAD_FILES, ids=[f"{k}-{s[:20]}" for k, _, _, s in BAD_FILES])
def test_a_bad_file_of_any_kind_fails_alone_with_its_place(plan, kind, path, data, start):
    outcome = ADAPTERS[kind](data, path, plan, False)
    assert outcome.status == FAILED and outcome.output is None
    assert outcome.error.startswith(start), outcome.error  # the place in the file; the path is the result's own
    assert path not in outcome.error
    assert outcome.error.endswith("; file left unchanged") and outcome.error.count("left unchanged") == 1


@pytest.mark.parametrize("kind", ["python", "shell", "requirements", "dockerfile"])
def test_a_bug_in_a_rule_costs_one_file_and_says_where(plan, kind, monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("boom")

    target = {
        "python": ("neuron_migrate.migrate.engine", "migrate_python"),
        "shell": ("neuron_migrate.migrate.shell", "migrate_shell_text"),
        "requirements": ("neuron_migrate.migrate.requirements", "_FileEdit"),
        "dockerfile": ("neuron_migrate.migrate.dockerfile", "migrate_dockerfile_text"),
    }[kind]
    monkeypatch.setattr(".".join(target), broken)
    name = {"python": "a.py", "shell": "a.sh", "requirements": "requirements.txt", "dockerfile": "Dockerfile"}[kind]
    outcome = ADAPTERS[kind](b"torch_xla\n", name, plan, False)
    assert outcome.status == FAILED
    assert outcome.error.startswith("internal error: KeyError: 'boom' (at ")  # the path is the result's own
    assert outcome.error.endswith("; file left unchanged")


def test_guarded_turns_deep_nesting_into_a_failure():
    def deep():
        raise RecursionError

    assert sources.guarded(deep).error == "nested too deeply to parse; file left unchanged"


META = RuleMeta("NM999", "a test rule", REVIEW, risks=frozenset({"numerics"}))


def test_the_reporter_builds_findings_and_honours_ignore_comments():
    from neuron_migrate.report.model import Span

    reporter = Reporter("a.sh", "run\nrun  # neuron-migrate: ignore[NM999]\n", cell=3)
    assert not reporter.suppresses("NM999", [1]) and reporter.suppresses("NM999", [2])
    assert not reporter.suppresses("NM998", [2])
    made = reporter.add(META, Span(1, 1, 1, 4), "did it", SAFE, applied=True, before="run")
    left = reporter.add(META, Span(1, 1, 1, 4), "do it", MANUAL, applied=False, before="run")
    skipped = reporter.skipped(META, Span(2, 1, 2, 4), "run")
    assert [f.severity for f in (made, left, skipped)] == ["info", "warning", "warning"]
    assert skipped.suppressed and skipped.message == "a test rule (suppressed by comment)"
    assert made.cell == 3 and made.risks == ("numerics",) and made.fingerprint
    assert reporter.findings == [made, left, skipped]


def test_marker_texts_are_one_form_for_every_kind():
    assert marker_comment("NM1", MANUAL, "do X") == "# TODO(neuron-migrate NM1): do X"
    assert marker_comment("NM1", REVIEW, "check X") == "# neuron-migrate(NM1): check X"
