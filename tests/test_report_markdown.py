"""Markdown for a PR comment: the sections a reviewer needs, escaped so user code cannot break the page."""

from __future__ import annotations

import re

import pytest
from test_report_render import CATALOG, EVIL_DIFF, TRAIN_DIFF, empty_report, sample_report

from neuron_migrate.report import markdown
from neuron_migrate.report.model import CHANGED, FileResult
from neuron_migrate.report.render import render

MarkdownIt = pytest.importorskip("markdown_it").MarkdownIt


def md(report=None) -> str:
    return render(report or sample_report(), "md", rules=CATALOG)


def to_html(text: str) -> str:
    """How a GitHub-like renderer (raw HTML allowed, tables on) turns the comment into a page."""
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(text)


def section(text: str, title: str) -> str:
    match = re.search(rf"^### {re.escape(title)}\n(.*?)(?=^### |\Z)", text, re.S | re.M)
    assert match, f"no section {title!r}"
    return match[1].strip()


def test_title_and_totals():
    lines = md().splitlines()
    assert lines[0] == "## neuron-migrate rewrite (check mode)"
    assert lines[2] == (
        "**6 files scanned · 2 changed · 3 edits (1 to review) · 2 manual · 1 failed · 1 skipped · 1 suppressed**"
    )


def test_files_table():
    rows = section(md(), "Files").splitlines()
    assert rows[:2] == [
        "| File | Status | Edits | To review | Manual | Lines |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    assert rows[2] == "| `train.py` | changed | 2 | 1 | 1 | +4 −3 |"
    assert rows[4] == "| `notebooks/explore.ipynb` | unchanged | 0 | 0 | 1 | – |"
    assert len(rows) == 5  # untouched, failed and skipped files are not rows
    # The pipe in the hostile path must not split the row into an extra cell.
    page = to_html(md())
    table = page[page.index("<table>") : page.index("</table>")]
    for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)[1:]:
        assert row.count("<td") == 6


def test_not_processed():
    assert section(md(), "Not processed").splitlines() == [
        "- `broken.py` (failed): broken.py:3:9: invalid syntax",
        "- `vendor/lib.py` (skipped): excluded by config",
    ]


def test_needs_a_human_lists_manual_items_with_location_rule_message_and_fix():
    assert section(md(), "Needs a human").splitlines() == [
        "- `train.py:7:12` **NM100** legacy API without an automatic migration: "
        "`torch_xla.core.xla_model.xla_device_kind` has no TorchNeuron equivalent",
        "  - Fix: Use `torch.neuron.get_device_name()` if a x &lt; y check needs it.",
        "- `notebooks/explore.ipynb:2:1 (cell 3)` **NM100** legacy API without an automatic migration: "
        "`torch_xla.debug.metrics` has no TorchNeuron equivalent",
        "  - Fix: Use torch.profiler instead.",
    ]
    # The suppressed finding is not work left to do.
    assert "train.py:9:1" not in section(md(), "Needs a human")


def test_reviewer_checklist_is_grouped_by_risk_tag():
    text = section(md(), "Reviewer checklist").split("<details>")[0]
    tags = re.findall(r"^\*\*([a-z-]+)\*\*: ", text, re.M)
    assert tags == ["numerics", "collectives", "performance"]
    assert text.count("- [ ] `train.py:5:5` NM130 (review): xm.all\\_reduce -&gt; dist.all\\_reduce") == 2
    assert "- [ ] `train.py:7:12` NM100 (manual): `torch_xla.core.xla_model.xla_device_kind`" in text
    assert "Run with two or more workers" in text
    # Safe edits need no review.
    assert "NM110" not in text


def test_suppressed_findings_are_folded_away():
    text = md()
    assert "<details><summary>Suppressed by comment (1)</summary>" in text
    assert "- `train.py:9:1` NM110: xm.mark\\_step() / torch\\_xla.sync() removed (suppressed by comment)" in text


def test_diffs_are_folded_diff_fences():
    text = section(md(), "Diffs")
    assert "<details><summary><code>train.py</code> (+4 −3)</summary>\n\n```diff\n" + TRAIN_DIFF + "```\n\n</details>" in text
    assert "<summary><code>src/&lt;script&gt;alert(&#x27;p&#x27;)&lt;/script&gt;|x`y.py</code> (+1 −1)</summary>" in text
    assert EVIL_DIFF in text
    page = to_html(md())
    assert page.count('<code class="language-diff">') == 2


def test_user_code_never_becomes_html():
    page = to_html(md())
    assert "<script>" not in page
    assert "&lt;script&gt;" in page
    # Markup in the diff stays code.
    assert re.search(r"<code class=\"language-diff\">.*&lt;/script&gt;&lt;script&gt;", page, re.S)


def test_fence_outgrows_backticks_in_the_diff():
    report = sample_report()
    report.files[0].diff = "--- a/x.md\n+++ b/x.md\n@@ -1 +1 @@\n-```py\n+````py\n"
    text = md(report)
    assert "`````diff\n--- a/x.md" in text
    assert to_html(text).count('<code class="language-diff">') == 2


def test_long_diffs_are_left_out_with_a_pointer():
    report = sample_report()
    huge = "--- a/big.py\n+++ b/big.py\n@@ -1,1 +1,1 @@\n-" + "x" * markdown.DIFF_BUDGET + "\n+y\n"
    report.files.append(FileResult("big.py", CHANGED, diff=huge))
    text = md(report)
    assert "Diffs left out to keep this comment short: `big.py`. The HTML or JSON report has them." in text
    assert "xxxxxxxx" not in text
    assert len(text) < 65536
    assert TRAIN_DIFF in text


def test_empty_report():
    assert render(empty_report(), "md") == (
        "## neuron-migrate rewrite (write mode)\n\n"
        "**1 file scanned · 0 changed · 0 edits (0 to review) · 0 manual**\n\n"
        "Nothing to migrate.\n"
    )


def test_text_escaping_keeps_code_spans():
    assert markdown.text("use `a|b<c>` not *x* <b>") == "use `a|b<c>` not \\*x\\* &lt;b&gt;"
    assert markdown.text("two\nlines   here") == "two lines here"
    assert markdown.code("a`b") == "``a`b``"
    assert markdown.code("`x") == "`` `x ``"
