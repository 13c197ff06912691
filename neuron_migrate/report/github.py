"""GitHub Actions workflow commands: one ``::error`` / ``::warning`` / ``::notice`` line per finding, which the
Actions runner shows as an annotation on the line of the pull request's diff.

Severity decides the level for audit findings; for rewrite findings what is left to a human is a warning and an
applied edit a notice. Property values and messages are escaped as the runner's command parser expects.
"""

from __future__ import annotations

from typing import Any

from neuron_migrate.report.model import ERROR, FAILED, INFO, WARNING, Finding, Report

LEVELS = {ERROR: "error", WARNING: "warning", INFO: "notice"}


def render(report: Report, rules: dict[str, dict[str, Any]]) -> str:
    audit = report.mode in ("static", "runtime")  # the audit's modes; a rewrite reports "write", "diff" or "check"
    lines = [annotation(f, rules.get(f.rule, {}).get("title", ""), audit) for f in report.findings if not f.suppressed]
    lines += [f"::error file={_property(r.path)},title=neuron-migrate::{_message(r.error)}" for r in report.files
              if r.error and r.status == FAILED]
    return "".join(line + "\n" for line in lines)


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
