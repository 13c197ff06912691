"""Markdown for a PR comment: the sections a reviewer needs, escaped so user code cannot break the page."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from test_report_render import CATALOG, EVIL_DIFF, TRAIN_DIFF, empty_report, sample_report

from neuron_migrate.report import markdown
from neuron_migrate.report.model import CHANGED, MANUAL, REVIEW, SAFE, FileResult, Finding, Report, Span
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
    rows = section(md(), "Files").split("\n\n")[0].splitlines()
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
        "- `broken.py` (failed): 3:9: invalid syntax",
        "- `vendor/lib.py` (skipped): excluded by the configuration",
    ]


def test_needs_a_human_lists_manual_items_by_file_with_line_rule_message_and_fix():
    assert section(md(), "Needs a human (2)").splitlines() == [
        "#### `train.py`",
        "",
        "- `7:12` **NM100** legacy API without an automatic migration (performance): "
        "`torch_xla.core.xla_model.xla_device_kind` has no TorchNeuron equivalent",
        "  - Fix: Use `torch.neuron.get_device_name()` if a x &lt; y check needs it.",
        "",
        "#### `notebooks/explore.ipynb`",
        "",
        "- `cell 3, 2:1` **NM100** legacy API without an automatic migration: "
        "`torch_xla.debug.metrics` has no TorchNeuron equivalent",
        "  - Fix: Use torch.profiler instead.",
    ]
    # The suppressed finding is not work left to do.
    assert "9:1" not in section(md(), "Needs a human (2)")


def test_findings_come_by_importance_manual_then_review_then_safe():
    text = md()
    order = [text.index(f"### {title}") for title in ("Reviewer checklist", "Not processed", "Needs a human (2)",
                                                       "To review (1)", "Safe edits (2)", "Files", "Diffs")]
    assert order == sorted(order)
    assert "- `5:5` **NM130**" in section(text, "To review (1)")
    assert section(text, "Safe edits (2)").count("**NM110**") == 2


def test_reviewer_checklist_is_one_task_per_risk_tag():
    text = section(md(), "Reviewer checklist")
    tags = re.findall(r"^- \[ \] \*\*([a-z-]+)\*\* \((\d+)\): ", text, re.M)
    assert tags == [("numerics", "1"), ("collectives", "1"), ("performance", "1")]
    assert text.count("  - `train.py:5:5` NM130") == 2
    assert "  - `train.py:7:12` NM100" in text
    assert "Run with two or more workers" in text
    # Safe edits need no review.
    assert "NM110" not in text


def test_checklist_names_the_first_places_and_counts_the_rest():
    report = sample_report()
    review = next(f for f in report.files[0].findings if f.rule == "NM130")
    report.files[0].findings += [replace(review, span=replace(review.span, line=100 + n)) for n in range(10)]
    text = section(md(report), "Reviewer checklist")
    assert "(11): Compare losses" in text
    assert f", +{11 - markdown.CHECKLIST_PLACES} more" in text


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
    huge = "--- a/big.py\n+++ b/big.py\n@@ -1,1 +1,1 @@\n-" + "x" * markdown.COMMENT_LIMIT + "\n+y\n"
    report.files.append(FileResult("big.py", CHANGED, diff=huge))
    text = md(report)
    assert "1 other item (file rows, diffs)" in text
    assert "`neuron-migrate rewrite` with `--report report.html` (or `report.json`)" in text
    assert "xxxxxxxx" not in text
    assert len(text) < markdown.COMMENT_LIMIT
    assert TRAIN_DIFF in text, "the smaller diffs still fit"


def big_report(files: int) -> Report:
    """A tree the size of a real repository: every file with a manual item, a review edit, safe edits and a diff."""
    report = Report(tool_version="0", command="rewrite", mode="check")
    for n in range(files):
        path = f"src/package_{n // 50}/module_with_a_long_name_{n}.py"
        findings = [
            Finding("NM100", f"`torch_xla.debug.metrics` has no TorchNeuron equivalent ({n})", path,
                    Span(3, 1, 3, 30), MANUAL, False, fix="Use torch.profiler instead."),
            Finding("NM130", "xm.all_reduce -> dist.all_reduce", path, Span(5, 5, 5, 40), REVIEW, True,
                    risks=("collectives",), before="xm.all_reduce(xm.REDUCE_SUM, [loss])"),
            *[Finding("NM110", "xm.mark_step() removed", path, Span(10 + k, 5, 10 + k, 19), SAFE, True,
                      before="xm.mark_step()") for k in range(3)],
        ]
        report.files.append(FileResult(path, CHANGED, findings=findings, diff=TRAIN_DIFF.replace("train.py", path)))
    return report


def test_a_big_tree_fits_in_one_comment_most_important_first():
    text = md(big_report(400))
    assert len(text) < markdown.COMMENT_LIMIT
    assert "**400 files scanned · 400 changed · 1600 edits (400 to review) · 400 manual**" in text
    assert "- [ ] **collectives** (400):" in text
    # Manual items go in before any review edit, review edits before any safe edit.
    shown = section(text, "Needs a human (400)")
    listed = shown.count("**NM100**")
    assert 100 < listed < 400
    assert "To review (400)" not in text and "Safe edits (1200)" not in text and "### Diffs" not in text
    left = 400 - listed + 400 + 1200
    assert f"**Left out to stay under GitHub's 65,536-character comment limit: {left} findings" in text
    assert text.rstrip().endswith("(or `report.json`).")


def test_a_small_tree_is_complete():
    report = big_report(3)
    text = md(report)
    assert "Left out" not in text
    for f in report.findings:
        assert f"`{f.span.line}:{f.span.column}` **{f.rule}**" in text
    assert text.count("<details><summary><code>src/") == 3


def test_an_audit_points_at_its_own_options():
    report = big_report(400)
    report.command = "audit"
    assert "`neuron-migrate audit` with `--format html --output report.html`" in md(report)


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
