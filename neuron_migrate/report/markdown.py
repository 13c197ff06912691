"""Markdown for a pull-request comment (GitHub-flavoured: tables, task lists, ``<details>``).

Reading order follows what a reviewer does: how much changed, what still needs a human, what to
check by risk, then the diffs, folded. GitHub caps a comment at 65536 characters, so diffs beyond
a budget are left out with a pointer to the full report instead of breaking the comment.
"""

from __future__ import annotations

import html
import re
from typing import Any

from neuron_migrate.report.model import CHANGED, FAILED, REVIEW, SKIPPED, FileResult, Report
from neuron_migrate.report.render import RISK_GUIDANCE, diff_stats, location, position

DIFF_BUDGET = 45_000


def render(report: Report, rules: dict[str, dict[str, Any]]) -> str:
    sections = [
        f"## neuron-migrate {report.command} ({report.mode} mode)",
        totals_line(report),
    ]
    if not any(fr.findings or fr.diff or fr.error for fr in report.files):
        sections.append("Nothing to migrate.")
        return "\n\n".join(sections) + "\n"
    sections += [
        files_table(report),
        not_processed(report),
        needs_a_human(report, rules),
        checklist(report),
        suppressed(report),
        diffs(report),
    ]
    return "\n\n".join(s for s in sections if s) + "\n"


def totals_line(report: Report) -> str:
    t = report.totals()
    parts = [
        f"{t['files']} {plural(t['files'], 'file')} scanned",
        f"{t['changed']} changed",
        f"{t['edits']} {plural(t['edits'], 'edit')} ({t['review']} to review)",
        f"{t['manual']} manual",
    ]
    if t["failed"]:
        parts.append(f"{t['failed']} failed")
    if t["skipped"]:
        parts.append(f"{t['skipped']} skipped")
    if t["suppressed"]:
        parts.append(f"{t['suppressed']} suppressed")
    return "**" + " · ".join(parts) + "**"


def files_table(report: Report) -> str:
    rows = [fr for fr in report.files if fr.status == CHANGED or fr.manual]
    if not rows:
        return ""
    lines = [
        "### Files",
        "",
        "| File | Status | Edits | To review | Manual | Lines |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for fr in rows:
        review = sum(1 for f in fr.edits if f.safety == REVIEW)
        lines.append(
            f"| {cell(code(fr.path))} | {fr.status} | {len(fr.edits)} | {review} | {len(fr.manual)} | {line_counts(fr)} |"
        )
    return "\n".join(lines)


def line_counts(fr: FileResult) -> str:
    if not fr.diff:
        return "–"
    added, removed = diff_stats(fr.diff)
    return f"+{added} −{removed}"


def not_processed(report: Report) -> str:
    failed = [fr for fr in report.files if fr.status in (FAILED, SKIPPED) and fr.error]
    if not failed:
        return ""
    lines = ["### Not processed", ""]
    for fr in failed:
        lines.append(f"- {code(fr.path)} ({fr.status}): {text(fr.error)}")
    return "\n".join(lines)


def needs_a_human(report: Report, rules: dict[str, dict[str, Any]]) -> str:
    manual = [f for fr in report.files for f in sorted(fr.manual, key=position)]
    if not manual:
        return ""
    lines = ["### Needs a human", ""]
    for f in manual:
        title = rules.get(f.rule, {}).get("title", "")
        rule = f"**{f.rule}**" + (f" {text(title)}" if title and title != f.rule else "")
        lines.append(f"- {code(location(f))} {rule}: {text(f.message)}")
        if f.fix:
            lines.append(f"  - Fix: {text(f.fix)}")
    return "\n".join(lines)


def checklist(report: Report) -> str:
    groups = report.checklist()
    if not groups:
        return ""
    lines = ["### Reviewer checklist"]
    for tag, findings in groups.items():
        lines += ["", f"**{tag}**: {RISK_GUIDANCE[tag]}" if tag in RISK_GUIDANCE else f"**{tag}**", ""]
        lines += [
            f"- [ ] {code(location(f))} {f.rule} ({f.safety}): {text(f.message)}"
            + (f" Check: {text(f.fix)}" if f.fix else "")
            for f in findings
        ]
    return "\n".join(lines)


def suppressed(report: Report) -> str:
    quiet = [f for f in report.findings if f.suppressed]
    if not quiet:
        return ""
    items = "\n".join(f"- {code(location(f))} {f.rule}: {text(f.message)}" for f in quiet)
    return f"<details><summary>Suppressed by comment ({len(quiet)})</summary>\n\n{items}\n\n</details>"


def diffs(report: Report) -> str:
    changed = [fr for fr in report.files if fr.diff]
    if not changed:
        return ""
    blocks = ["### Diffs"]
    budget = DIFF_BUDGET
    left_out = []
    for fr in changed:
        if len(fr.diff) > budget:
            left_out.append(fr)
            continue
        budget -= len(fr.diff)
        blocks.append(diff_block(fr))
    if left_out:
        names = ", ".join(code(fr.path) for fr in left_out)
        blocks.append(f"Diffs left out to keep this comment short: {names}. The HTML or JSON report has them.")
    return "\n\n".join(blocks)


def diff_block(fr: FileResult) -> str:
    added, removed = diff_stats(fr.diff)
    body = fr.diff if fr.diff.endswith("\n") else fr.diff + "\n"
    fence = "`" * max(3, longest_run(body, "`") + 1)
    summary = f"<code>{html.escape(fr.path)}</code> (+{added} −{removed})"
    return f"<details><summary>{summary}</summary>\n\n{fence}diff\n{body}{fence}\n\n</details>"


# ----- escaping -------------------------------------------------------------------------------

CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# Characters that start Markdown structure in running text; < > & become entities instead.
MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~#!])")


def text(value: str) -> str:
    """Running text from a rule message: one line; `code spans` kept, everything else inert.

    Messages quote code in backticks on purpose, so those spans stay code (where nothing needs
    escaping); outside them, HTML and Markdown characters are neutralised so that user code such as
    ``x < y`` or ``<script>`` shows as written.
    """
    one_line = " ".join(value.split())
    out, pos = [], 0
    for match in CODE_SPAN.finditer(one_line):
        out.append(_plain(one_line[pos : match.start()]))
        out.append(match[0])
        pos = match.end()
    out.append(_plain(one_line[pos:]))
    return "".join(out)


def _plain(value: str) -> str:
    return MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(value, quote=False))


def code(value: str) -> str:
    """An inline code span that survives backticks inside ``value``."""
    one_line = " ".join(value.split())
    ticks = "`" * (longest_run(one_line, "`") + 1)
    pad = " " if one_line.startswith("`") or one_line.endswith("`") else ""
    return f"{ticks}{pad}{one_line}{pad}{ticks}"


def cell(value: str) -> str:
    """Table cell content: a pipe ends the cell even inside a code span unless escaped."""
    return value.replace("|", "\\|")


def longest_run(value: str, char: str) -> int:
    runs = re.findall(f"{re.escape(char)}+", value)
    return max((len(r) for r in runs), default=0)


def plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"
