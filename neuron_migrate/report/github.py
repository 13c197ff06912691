"""GitHub Actions workflow commands: one ``::error`` / ``::warning`` / ``::notice`` line per finding, which the
Actions runner shows as an annotation on the line of the pull request's diff.

Severity decides the level for audit findings; for rewrite findings what is left to a human is a warning and an
applied edit a notice. Property values and messages are escaped as the runner's command parser expects.

GitHub shows at most 10 annotations of each level per step (and 50 per job, all steps together) and drops the
rest without a word. So the most important ones are printed first and only as many as it shows: files that
could not be processed, then the work left to a human, then edits to review, then safe edits; and a closing
``::notice`` says how many were left out and where the full list is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from neuron_migrate.report.model import ERROR, FAILED, INFO, MANUAL, REVIEW, WARNING, Finding, Report

LEVELS = {ERROR: "error", WARNING: "warning", INFO: "notice"}

# GitHub's documented limits for annotations made by workflow commands: 10 errors, 10 warnings and 10 notices
# per step, 50 per job. Three levels of 10 stay inside the job's 50 with room for other steps.
PER_LEVEL = 10

POSITION = re.compile(r"(?P<line>\d+):(?P<col>\d+):\s*")

LEVEL_ORDER = {"error": 0, "warning": 1, "notice": 2}
SAFETY_ORDER = {MANUAL: 0, REVIEW: 1}  # safe (and anything else) last
SEVERITY_ORDER = {ERROR: 0, WARNING: 1}  # info last


@dataclass(frozen=True)
class Annotation:
    level: str
    rank: tuple
    line: str


def render(report: Report, rules: dict[str, dict[str, Any]], full_report: str | None = None) -> str:
    """The annotations GitHub will show, most important first, and a closing notice for those left out.

    ``full_report`` names where every finding is (the ``--report`` files of the run); without it the notice
    says how to write one."""
    audit = report.mode in ("static", "runtime")  # the audit's modes; a rewrite reports "write", "diff" or "check"
    shown, left_out = capped(annotations(report, rules, audit))
    lines = [a.line for a in shown]
    if left_out:
        lines.append(closing_notice(left_out, full_report, audit))
    return "".join(line + "\n" for line in lines)


def annotations(report: Report, rules: dict[str, dict[str, Any]], audit: bool) -> list[Annotation]:
    out = [Annotation("error", (-1, r.path), failure(r.path, r.error)) for r in report.files
           if r.error and r.status == FAILED]
    for f in report.findings:
        if f.suppressed:
            continue
        level = _level(f, audit)
        rank = (SAFETY_ORDER.get(f.safety, 2), SEVERITY_ORDER.get(f.severity, 2), f.path, f.cell or 0, f.span.line,
                f.span.column, f.rule)
        out.append(Annotation(level, rank, annotation(f, rules.get(f.rule, {}).get("title", ""), audit)))
    return sorted(out, key=lambda a: (LEVEL_ORDER[a.level], a.rank))


def capped(ordered: list[Annotation]) -> tuple[list[Annotation], dict[str, int]]:
    """The first ``PER_LEVEL`` of each level, and how many of each level are left out. When anything is left
    out the closing notice takes one of the notices' places, so that GitHub shows it too."""
    counts = {level: sum(1 for a in ordered if a.level == level) for level in LEVEL_ORDER}
    room = {level: PER_LEVEL for level in LEVEL_ORDER}
    if any(count > PER_LEVEL for count in counts.values()):
        room["notice"] = PER_LEVEL - 1
    shown, seen = [], dict.fromkeys(LEVEL_ORDER, 0)
    for a in ordered:
        seen[a.level] += 1
        if seen[a.level] <= room[a.level]:
            shown.append(a)
    left_out = {level: counts[level] - min(counts[level], room[level]) for level in LEVEL_ORDER}
    return shown, {level: n for level, n in left_out.items() if n}


def closing_notice(left_out: dict[str, int], full_report: str | None, audit: bool) -> str:
    total = sum(left_out.values())
    kinds = ", ".join(f"{n} {level}{'s' if n > 1 else ''}" for level, n in left_out.items())
    if full_report:
        where = f"every finding is in {full_report}"
    elif audit:
        where = "for every finding run `neuron-migrate audit --format md -o audit.md` (or sarif, json, html)"
    else:
        where = "for every finding run `neuron-migrate rewrite --check --report migration.md` (or .sarif, .json, .html)"
    text = (f"{total} findings left out of these annotations ({kinds}): GitHub shows {PER_LEVEL} of each level "
            f"per step, so only the most important are above; {where}")
    return f"::notice title=neuron-migrate::{_message(text)}"


def failure(path: str, error: str) -> str:
    """A file that could not be processed, on the line its error names when it names one."""
    where = f"file={_property(path)}"
    match = POSITION.match(error)
    if match:
        where += f",line={match['line']},col={match['col']}"
        error = error[match.end():]
    return f"::error {where},title=neuron-migrate::{_message(error)}"


def annotation(finding: Finding, title: str, audit: bool = False) -> str:
    span = finding.span
    where = f"file={_property(finding.path)},line={span.line},col={span.column}"
    if span.end_line >= span.line:
        where += f",endLine={span.end_line}"
        if span.end_line == span.line and span.end_column > span.column:
            where += f",endColumn={span.end_column}"
    heading = f"{finding.rule} {title}".strip()
    extra = finding.fix and not finding.applied and finding.fix != finding.message
    text = finding.message + (f"\nfix: {finding.fix}" if extra else "")
    return f"::{_level(finding, audit)} {where},title={_property(heading)}::{_message(text)}"


def _level(finding: Finding, audit: bool) -> str:
    if audit:
        return LEVELS.get(finding.severity, "warning")
    return "notice" if finding.applied and finding.safety != "manual" else "warning"


def _message(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _message(text).replace(":", "%3A").replace(",", "%2C")
