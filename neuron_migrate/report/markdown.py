"""Markdown for a pull-request comment (GitHub-flavoured: tables, task lists, ``<details>``).

GitHub caps a comment at 65,536 characters, so the comment is written in order of importance
within a budget: the totals and the reviewer checklist, then what needs a human (manual TODOs,
files that could not be processed), then edits to review, then safe edits, each grouped by file;
then the files table and the diffs, folded. What does not fit is counted in a last line that
points at the full report (HTML or JSON), which has everything.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from neuron_migrate.report.model import CHANGED, FAILED, REVIEW, SAFE, SKIPPED, FileResult, Finding, Report, position
from neuron_migrate.report.render import RISK_GUIDANCE, diff_stats, location

# GitHub's limit for a comment body, and what this renderer may use of it: the rest is kept for
# the line that says what was left out.
COMMENT_LIMIT = 65_536
BUDGET = COMMENT_LIMIT - 1_536
# How many places the checklist names per risk tag; the findings sections list them all.
CHECKLIST_PLACES = 5

# Where the full report is, by command (rewrite and audit spell the option differently).
FULL_REPORT = {
    "rewrite": "`--report report.html` (or `report.json`)",
    "audit": "`--format html --output report.html` (or `--format json`)",
}


@dataclass
class Budget:
    """Characters left, and what did not fit. Once a finding did not fit, no later finding goes in
    either: the comment never shows a safe edit while leaving out a manual item."""

    left: int = BUDGET
    full: bool = False
    findings_left_out: int = 0
    other_left_out: int = 0

    def take(self, block: str) -> bool:
        cost = len(block) + 2  # the blank line that joins blocks
        if self.full or cost > self.left:
            return False
        self.left -= cost
        return True


def render(report: Report, rules: dict[str, dict[str, Any]]) -> str:
    head = [f"## neuron-migrate {report.command} ({report.mode} mode)", totals_line(report)]
    if not any(fr.findings or fr.diff or fr.error for fr in report.files):
        return "\n\n".join([*head, "Nothing to migrate."]) + "\n"
    budget = Budget()
    blocks = [*head, checklist(report)]
    for block in blocks:
        budget.take(block)
    blocks += [
        not_processed(report, budget),
        needs_a_human(report, rules, budget),
        findings_section("To review", edits(report, REVIEW), rules, budget),
        findings_section("Safe edits", edits(report, SAFE), rules, budget),
        files_table(report, budget),
        suppressed(report, budget),
        diffs(report, budget),
        left_out(report, budget),
    ]
    return "\n\n".join(b for b in blocks if b) + "\n"


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


def checklist(report: Report) -> str:
    """One task per risk tag: what to check, how many findings, and the first places."""
    groups = report.checklist()
    if not groups:
        return ""
    lines = ["### Reviewer checklist", ""]
    for tag, findings in groups.items():
        guidance = f" {RISK_GUIDANCE[tag]}" if tag in RISK_GUIDANCE else ""
        places = ", ".join(f"{code(location(f))} {f.rule}" for f in findings[:CHECKLIST_PLACES])
        more = f", +{len(findings) - CHECKLIST_PLACES} more" if len(findings) > CHECKLIST_PLACES else ""
        lines.append(f"- [ ] **{tag}** ({len(findings)}):{guidance}")
        lines.append(f"  - {places}{more}")
    return "\n".join(lines)


def not_processed(report: Report, budget: Budget) -> str:
    failed = [fr for fr in report.files if fr.status in (FAILED, SKIPPED) and fr.error]
    if not failed:
        return ""
    heading = "### Not processed"
    lines = [heading, ""]
    budget.take(heading)
    for fr in failed:
        line = f"- {code(fr.path)} ({fr.status}): {text(fr.error)}"
        if budget.take(line):
            lines.append(line)
        else:
            budget.other_left_out += 1
    return "\n".join(lines)


def needs_a_human(report: Report, rules: dict[str, dict[str, Any]], budget: Budget) -> str:
    return findings_section("Needs a human", report.needs_a_human(), rules, budget)


def edits(report: Report, safety: str) -> list[Finding]:
    """Applied edits of one safety, file by file (``needs_a_human`` already holds the manual ones)."""
    return [f for fr in report.files for f in sorted(fr.edits, key=position) if f.safety == safety]


def findings_section(title: str, findings: list[Finding], rules: dict[str, dict[str, Any]], budget: Budget) -> str:
    """``### Title (n)``, then per file a ``#### `path``` heading and one item per finding."""
    if not findings:
        return ""
    heading = f"### {title} ({len(findings)})"
    if not budget.take(heading):
        budget.findings_left_out += len(findings)
        return ""
    lines = [heading]
    for path, group in by_file(findings):
        file_heading = f"#### {code(path)}"
        placed = False
        for f in group:
            item = finding_item(f, rules)
            # A file's heading goes in with its first item, never on its own.
            if budget.take(item if placed else f"{file_heading}\n\n{item}"):
                lines += [item] if placed else ["", file_heading, "", item]
                placed = True
            else:
                budget.full = True
                budget.findings_left_out += 1
    return "\n".join(lines)


def by_file(findings: Iterable[Finding]) -> list[tuple[str, list[Finding]]]:
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.path, []).append(f)
    return list(groups.items())


def finding_item(f: Finding, rules: dict[str, dict[str, Any]]) -> str:
    where = f"{f.span.line}:{f.span.column}" if f.cell is None else f"cell {f.cell}, {f.span.line}:{f.span.column}"
    title = rules.get(f.rule, {}).get("title", "")
    rule = f"**{f.rule}**" + (f" {text(title)}" if title and title != f.rule else "")
    risks = f" ({', '.join(f.risks)})" if f.risks and f.safety != SAFE else ""
    item = f"- {code(where)} {rule}{risks}: {text(f.message)}"
    if f.fix:
        item += f"\n  - {'Fix' if not f.applied else 'Check'}: {text(f.fix)}"
    return item


def files_table(report: Report, budget: Budget) -> str:
    rows = [fr for fr in report.files if fr.status == CHANGED or fr.manual]
    if not rows:
        return ""
    header = "\n".join([
        "### Files",
        "",
        "| File | Status | Edits | To review | Manual | Lines |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ])
    if not budget.take(header):
        budget.other_left_out += len(rows)
        return ""
    lines = [header]
    for fr in rows:
        review = sum(1 for f in fr.edits if f.safety == REVIEW)
        counts = f"{len(fr.edits)} | {review} | {len(fr.manual)} | {line_counts(fr)}"
        row = f"| {cell(code(fr.path))} | {fr.status} | {counts} |"
        if budget.take(row):
            lines.append(row)
        else:
            budget.other_left_out += 1
    return "\n".join(lines)


def line_counts(fr: FileResult) -> str:
    if not fr.diff:
        return "–"
    added, removed = diff_stats(fr.diff)
    return f"+{added} −{removed}"


def suppressed(report: Report, budget: Budget) -> str:
    quiet = [f for f in report.findings if f.suppressed]
    if not quiet:
        return ""
    items = "\n".join(f"- {code(location(f))} {f.rule}: {text(f.message)}" for f in quiet)
    block = f"<details><summary>Suppressed by comment ({len(quiet)})</summary>\n\n{items}\n\n</details>"
    if budget.take(block):
        return block
    budget.other_left_out += len(quiet)
    return ""


def diffs(report: Report, budget: Budget) -> str:
    """Folded diffs while they fit; one that does not is left out and the smaller ones after it
    still go in (a diff is never cut in the middle)."""
    changed = [fr for fr in report.files if fr.diff]
    if not changed or not budget.take("### Diffs"):
        budget.other_left_out += len(changed)
        return ""
    blocks = ["### Diffs"]
    for fr in changed:
        block = diff_block(fr)
        if budget.take(block):
            blocks.append(block)
        else:
            budget.other_left_out += 1
    return "\n\n".join(blocks)


def left_out(report: Report, budget: Budget) -> str:
    parts = []
    if budget.findings_left_out:
        parts.append(f"{budget.findings_left_out} {plural(budget.findings_left_out, 'finding')}")
    if budget.other_left_out:
        parts.append(f"{budget.other_left_out} other {plural(budget.other_left_out, 'item')} (file rows, diffs)")
    if not parts:
        return ""
    where = FULL_REPORT.get(report.command, FULL_REPORT["rewrite"])
    return (
        f"**Left out to stay under GitHub's {COMMENT_LIMIT:,}-character comment limit: {' and '.join(parts)}.** "
        f"The full report has them all: run `neuron-migrate {report.command}` with {where}."
    )


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
