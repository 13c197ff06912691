"""The report dispatch, plus the sample report every renderer test reads.

The sample is built by hand so each test can assert on exact content: two changed files (safe and
review edits, a manual item, a suppressed finding, a path that tries to inject HTML), a notebook
finding, a failed file and an untouched one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from neuron_migrate.report.model import (
    CHANGED,
    FAILED,
    MANUAL,
    REVIEW,
    SAFE,
    SKIPPED,
    UNCHANGED,
    WARNING,
    FileResult,
    Finding,
    Report,
    Span,
)
from neuron_migrate.report.render import diff_lines, diff_stats, format_for_path, location, render, rule_catalog

CATALOG = {
    "NM110": {
        "title": "xm.mark_step() / torch_xla.sync() removed",
        "safety": SAFE,
        "summary": "TorchNeuron executes eagerly; there is no lazy graph to cut.",
        "docs": ["https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/about-pytorch-neuron.html"],
        "risks": [],
    },
    "NM130": {
        "title": "xm.all_reduce -> torch.distributed.all_reduce",
        "safety": REVIEW,
        "summary": "Collectives go through the neuron process group.",
        "docs": ("https://docs.pytorch.org/docs/stable/distributed.html",),
        "risks": frozenset({"collectives", "numerics"}),
    },
    "NM100": {
        "title": "legacy API without an automatic migration",
        "safety": MANUAL,
        "summary": "A reference to a legacy Neuron/XLA API survived the rewrite.",
        "docs": ["javascript:alert(1)"],
        "risks": [],
    },
    "NM999": {"title": "a rule that did not run", "safety": SAFE, "summary": "", "docs": [], "risks": []},
}

TRAIN_DIFF = """\
--- a/train.py
+++ b/train.py
@@ -1,7 +1,8 @@
-import torch_xla.core.xla_model as xm
+import torch.distributed as dist
 
 for batch in loader:
     loss = model(batch).sum()
-    xm.all_reduce(xm.REDUCE_SUM, [loss])
-    xm.mark_step()
+    # neuron-migrate(NM130): check the reduced value is what the old code expected
+    dist.all_reduce(loss, op=dist.ReduceOp.SUM)
+    # TODO(neuron-migrate NM100): replace `xm.xla_device_kind` by hand
     kind = xm.xla_device_kind()
"""

EVIL_PATH = "src/<script>alert('p')</script>|x`y.py"
EVIL_DIFF = """\
--- a/src/evil.py
+++ b/src/evil.py
@@ -1,2 +1,1 @@
-s = "</script><script>alert(1)</script>"; xm.mark_step()
+s = "</script><script>alert(1)</script>"
 x = 1 < 2 & 3 > 0
"""


def span(line: int, column: int, end_line: int | None = None, end_column: int | None = None) -> Span:
    return Span(line, column, end_line or line, end_column or column + 10)


def sample_report() -> Report:
    mark_step = Finding(
        rule="NM110", message="xm.mark_step() removed", path="train.py", span=span(6, 5, 6, 19),
        safety=SAFE, applied=True, before="xm.mark_step()", after="",
    ).finalize()
    all_reduce = Finding(
        rule="NM130", message="xm.all_reduce -> dist.all_reduce", path="train.py", span=span(5, 5, 5, 41),
        safety=REVIEW, applied=True, risks=("collectives", "numerics"),
        before="xm.all_reduce(xm.REDUCE_SUM, [loss])", after="dist.all_reduce(loss, op=dist.ReduceOp.SUM)",
    ).finalize()
    leftover = Finding(
        rule="NM100", message="`torch_xla.core.xla_model.xla_device_kind` has no TorchNeuron equivalent",
        path="train.py", span=span(7, 12, 7, 30), safety=MANUAL, applied=False, severity=WARNING,
        risks=("performance",), before="xm.xla_device_kind()", fix="Use `torch.neuron.get_device_name()` if a x < y check needs it.",
    ).finalize()
    ignored = Finding(
        rule="NM110", message="xm.mark_step() / torch_xla.sync() removed (suppressed by comment)",
        path="train.py", span=span(9, 1, 9, 15), safety=SAFE, applied=False, severity=WARNING,
        before="xm.mark_step()  # neuron-migrate: ignore", suppressed=True,
    ).finalize()
    evil = Finding(
        rule="NM110", message="removed <script>alert('m')</script>", path=EVIL_PATH, span=span(1, 45, 1, 59),
        safety=SAFE, applied=True, before="xm.mark_step()", after="",
    ).finalize()
    cell = Finding(
        rule="NM100", message="`torch_xla.debug.metrics` has no TorchNeuron equivalent", path="notebooks/explore.ipynb",
        span=span(2, 1, 2, 26), safety=MANUAL, applied=False, severity=WARNING, cell=3,
        before="met.metrics_report()", fix="Use torch.profiler instead.",
    ).finalize()
    files = [
        FileResult("train.py", CHANGED, [all_reduce, mark_step, leftover, ignored], diff=TRAIN_DIFF),
        FileResult(EVIL_PATH, CHANGED, [evil], diff=EVIL_DIFF),
        FileResult("notebooks/explore.ipynb", UNCHANGED, [cell]),
        FileResult("broken.py", FAILED, error="3:9: invalid syntax"),
        FileResult("clean.py", UNCHANGED),
        FileResult("vendor/lib.py", SKIPPED, error="excluded by the configuration"),
    ]
    rules = {rule_id: dict(CATALOG[rule_id]) for rule_id in ("NM100", "NM110", "NM130")}
    return Report(tool_version="0.1.0", command="rewrite", mode="check", files=files, rules=rules, duration_seconds=1.23456)


def empty_report() -> Report:
    return Report(tool_version="0.1.0", command="rewrite", mode="write", files=[FileResult("clean.py")])


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("out.json", "json"),
        ("out.sarif", "sarif"),
        ("results.sarif.json", "sarif"),
        ("REPORT.MD", "md"),
        ("notes.markdown", "md"),
        ("report.html", "html"),
        ("report.htm", "html"),
    ],
)
def test_format_for_path(name, fmt):
    assert format_for_path(Path("reports") / name) == fmt


@pytest.mark.parametrize("name", ["out.txt", "out", "json", "out.json.bak"])
def test_format_for_path_rejects_unknown_extensions(name):
    with pytest.raises(ValueError, match="report format"):
        format_for_path(Path(name))


def test_render_rejects_unknown_format():
    with pytest.raises(ValueError, match="unknown report format 'xml'"):
        render(sample_report(), "xml")


@pytest.mark.parametrize("fmt", ["json", "sarif", "md", "html"])
def test_render_is_deterministic(fmt):
    assert render(sample_report(), fmt, rules=CATALOG) == render(sample_report(), fmt, rules=CATALOG)


def test_rule_catalog_keeps_rules_that_ran_or_fired_and_cleans_entries():
    report = sample_report()
    report.files[0].findings.append(
        Finding("NA201", "x.item() syncs the host", "train.py", span(8, 1), MANUAL, applied=False, risks=("performance",))
    )
    catalog = rule_catalog(report, CATALOG)
    assert list(catalog) == ["NA201", "NM100", "NM110", "NM130"]  # NM999 neither ran nor fired
    assert catalog["NM130"]["risks"] == ["numerics", "collectives"]  # checklist order
    assert catalog["NM130"]["docs"] == ["https://docs.pytorch.org/docs/stable/distributed.html"]
    # An id without metadata gets what its findings say, never a safer safety than they had.
    assert catalog["NA201"] == {"title": "NA201", "safety": MANUAL, "summary": "", "docs": [], "risks": ["performance"]}


@pytest.mark.parametrize("fmt", ["json", "sarif", "md", "html", "github", "statistics"])
def test_rendering_changes_nothing_in_the_report(fmt):
    report = sample_report()
    bare = Finding("NM110", "removed", "a.py", span(1, 1), SAFE, applied=True, before="xm.mark_step()")
    report.files.append(FileResult("a.py", CHANGED, [bare]))
    before = report.to_dict()
    render(report, fmt)
    assert report.to_dict() == before and bare.fingerprint == ""


def test_completing_the_report_counts_repeated_code():
    report = sample_report()
    twice = [Finding("NM110", "removed", "a.py", span(n, 1), SAFE, applied=True, before="xm.mark_step()") for n in (1, 2)]
    report.files.append(FileResult("a.py", CHANGED, twice))
    report.complete()
    assert len({f.fingerprint for f in twice}) == 2 and all(len(f.fingerprint) == 16 for f in twice)


def test_location_names_the_notebook_cell():
    report = sample_report()
    assert location(report.files[0].findings[0]) == "train.py:5:5"
    assert location(report.files[2].findings[0]) == "notebooks/explore.ipynb:2:1 (cell 3)"


def test_diff_lines_number_lines_and_do_not_mistake_removed_dashes_for_headers():
    diff = "--- a/x.py\n+++ b/x.py\n@@ -3,3 +3,2 @@\n keep\n--- looks like a header\n-gone\n+new\n\\ No newline at end of file\n"
    lines = diff_lines(diff)
    assert [line.kind for line in lines] == ["header", "header", "hunk", "context", "remove", "remove", "add", "note"]
    assert [(line.old, line.new) for line in lines[3:7]] == [(3, 3), (4, None), (5, None), (None, 4)]
    assert diff_stats(diff) == (1, 2)
    assert diff_stats(TRAIN_DIFF) == (4, 3)


def test_dockerfile_snippets_quote_the_file(tmp_path):
    """The Dockerfile adapter reads a view where other instructions are masked; reports show the real text."""
    from neuron_migrate.config import load_config
    from neuron_migrate.migrate.runner import run

    base = "FROM public.ecr.aws/neuron/pytorch-training-neuronx:2.1.2"
    (tmp_path / "Dockerfile").write_text(f"{base}\nRUN pip install torch-neuronx\n", encoding="utf-8")
    report = run([tmp_path], load_config([tmp_path], jobs=1, cache=False), mode="check")
    quoted = [f.before for f in report.findings]
    assert base in quoted, quoted
    for fmt in ("json", "sarif", "html", "md"):
        text = render(report, fmt)
        assert "#ROM" not in text, fmt
    assert base in render(report, "sarif") and base in render(report, "json")


def test_every_renderer_counts_needs_a_human_the_same():
    """One list in the model: manual findings and applied edits that left a TODO, never review edits."""
    import io
    import json
    import re

    from neuron_migrate.report import terminal

    report = sample_report()
    train = report.files[0]
    # An applied edit that left a TODO (a removed requirement to port by hand) is work for a human too.
    train.findings.append(Finding("NM100", "requirement removed", "train.py", Span(20, 1, 20, 9), MANUAL, True,
                                  before="torch-xla"))
    expected = len(report.needs_a_human())
    assert expected == 3 and report.totals()["review"] == 1

    rich = io.StringIO()
    terminal.Terminal(rich, io.StringIO(), plain=False).show(report)
    plain = io.StringIO()
    terminal.Terminal(plain, io.StringIO(), plain=True).show(report)
    counts = {
        "terminal": int(re.search(r"Needs a human\D*\((\d+)\)", rich.getvalue())[1]),
        "terminal table": int(re.search(r"manual\s+(\d+)", rich.getvalue())[1]),
        "plain": int(re.search(r"manual: (\d+)", plain.getvalue())[1]),
        "quiet": int(re.search(r"(\d+) manual", terminal.summary_line(report))[1]),
        "json": json.loads(render(report, "json"))["totals"]["manual"],
        "sarif": json.loads(render(report, "sarif"))["runs"][0]["properties"]["totals"]["manual"],
        "markdown": int(re.search(r"### Needs a human \((\d+)\)", render(report, "md"))[1]),
        "markdown totals": int(re.search(r"(\d+) manual", render(report, "md"))[1]),
        "html": int(re.search(r"Needs a human \((\d+)\)", render(report, "html"))[1]),
        "html card": int(re.search(r'<div class="n">(\d+)</div><div class="label">Manual', render(report, "html"))[1]),
    }
    assert counts == dict.fromkeys(counts, expected)
