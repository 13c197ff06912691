"""Pick a report format from a file name and render a :class:`Report` in it.

``render(report, fmt, rules=catalog)`` is the one entry point the CLI uses. ``rules`` is rule metadata
(``{rule_id: {title, safety, summary, docs, risks}}``); it is merged over ``report.rules`` and cleaned
up here once, so every renderer reads the same plain shape.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuron_migrate.report.model import MANUAL, REVIEW, RISK_TAGS, SAFE, SAFETIES, Finding, Report

FORMATS = ("json", "sarif", "md", "html")

# Checked longest first, so "results.sarif.json" is SARIF rather than plain JSON.
EXTENSIONS = {
    ".sarif.json": "sarif",
    ".sarif": "sarif",
    ".json": "json",
    ".md": "md",
    ".markdown": "md",
    ".html": "html",
    ".htm": "html",
}

# Renderer modules are imported on demand: the CLI only ever needs one of them per run.
_MODULES = {
    "json": "neuron_migrate.report.json_report",
    "sarif": "neuron_migrate.report.sarif",
    "md": "neuron_migrate.report.markdown",
    "html": "neuron_migrate.report.html",
    # stdout formats, not report files: GitHub Actions annotations and per-rule counts
    "github": "neuron_migrate.report.github",
    "statistics": "neuron_migrate.report.statistics",
}

def format_for_path(path: Path | str) -> str:
    name = Path(path).name.lower()
    for suffix in sorted(EXTENSIONS, key=len, reverse=True):
        if name.endswith(suffix):
            return EXTENSIONS[suffix]
    known = ", ".join(sorted(EXTENSIONS))
    raise ValueError(f"cannot tell the report format of {str(path)!r}: use one of {known}")


def render(report: Report, fmt: str, rules: Mapping[str, Mapping[str, Any]] | None = None, **options: Any) -> str:
    """``options`` go to the format's renderer (``full_report`` for github: where the complete list is)."""
    if fmt not in _MODULES:
        raise ValueError(f"unknown report format {fmt!r}: use one of {', '.join(FORMATS)}")
    module = importlib.import_module(_MODULES[fmt])
    # Renderers only read: the fingerprints were counted when the report was completed (Report.complete).
    return module.render(report, rule_catalog(report, rules), **options)


def rule_catalog(report: Report, rules: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Metadata for the rules this report is about: the rules that ran plus any a finding names.

    ``rules`` (usually the full catalog) only supplies descriptions; it does not add rules that
    neither ran nor fired, so a report of a ``--select NM110`` run stays about NM110.
    """
    known: dict[str, Mapping[str, Any]] = {**report.rules, **(rules or {})}
    wanted = set(report.rules) | {f.rule for f in report.findings}
    catalog = {}
    for rule_id in sorted(wanted):
        entry = rule_from_findings(rule_id, report.findings)
        given = known.get(rule_id, {})
        for key, value in clean_rule(given).items():
            # Known metadata wins, except a blank title or an unknown safety: the stand-in is better.
            if key not in given or (key == "title" and not value) or (key == "safety" and value not in SAFETIES):
                continue
            entry[key] = value
        catalog[rule_id] = entry
    return catalog


def clean_rule(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The documented keys only, with lists where callers may hand in tuples or sets."""
    return {
        "title": str(entry.get("title") or ""),
        "safety": str(entry.get("safety") or ""),
        "summary": str(entry.get("summary") or ""),
        "docs": _strings(entry.get("docs")),
        "risks": ordered_risks(_strings(entry.get("risks"))),
    }


def rule_from_findings(rule_id: str, findings: Iterable[Finding]) -> dict[str, Any]:
    """What the findings say about a rule with no metadata (e.g. one from a newer cache entry)."""
    mine = [f for f in findings if f.rule == rule_id]
    safeties = {f.safety for f in mine}
    # The most cautious safety any finding had: a stand-in must not make a rule look safer.
    safety = next((s for s in (MANUAL, REVIEW, SAFE) if s in safeties), MANUAL)
    return {
        "title": rule_id,
        "safety": safety,
        "summary": "",
        "docs": [],
        "risks": ordered_risks({tag for f in mine for tag in f.risks}),
    }


def ordered_risks(risks: Iterable[str]) -> list[str]:
    """Risk tags in the checklist's order, so every output lists them the same way."""
    risks = set(risks)
    return [tag for tag in RISK_TAGS if tag in risks] + sorted(risks - set(RISK_TAGS))


def _strings(value: Any) -> list[str]:
    if not value:
        return []
    if isinstance(value, str):
        return [value]
    # Sets (e.g. RuleMeta.risks) have no order of their own; sorting keeps the output deterministic.
    items = sorted(value) if isinstance(value, (set, frozenset)) else value
    return list(dict.fromkeys(str(v) for v in items))


# ----- wording shared by the human-readable renderers (Markdown, HTML) ------------------------

# What a reviewer does to clear each risk tag of the checklist.
RISK_GUIDANCE = {
    "numerics": "Compare losses or outputs with a run of the old code: dtype handling or op behaviour changed.",
    "collectives": "Run with two or more workers and check the process group, ranks, world size and reduced values.",
    "checkpoint-format": "Load a checkpoint written by the old code, then save and reload one with the new code.",
    "launch": "Start the job with torchrun and check the environment variables and processes per node.",
    "rng": "Check seeding: same seed, same first batches and dropout masks on every rank as before.",
    "performance": "Time a few steps and count compilations; look for recompiles and host syncs.",
}


def location(f: Finding) -> str:
    """``path:line:col``, with the notebook cell when the span counts lines inside a cell."""
    where = f"{f.path}:{f.span.line}:{f.span.column}"
    return f"{where} (cell {f.cell})" if f.cell is not None else where


HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class DiffLine:
    """One line of a unified diff: kind is header, hunk, add, remove, context or note."""

    kind: str
    text: str
    old: int | None = None
    new: int | None = None


def diff_lines(diff: str) -> list[DiffLine]:
    """Classify unified diff lines, numbering them from the hunk headers.

    Counting what each hunk header announces (rather than looking at the first character alone)
    keeps a removed line that itself starts with ``--`` from passing for a ``---`` file header.
    """
    out = []
    old = new = old_left = new_left = 0
    for text in diff.splitlines():
        match = HUNK.match(text)
        if old_left <= 0 and new_left <= 0 and not match:
            out.append(DiffLine("note" if text.startswith("\\") else "header", text))
            continue
        if match:
            old, new = int(match[1]), int(match[3])
            old_left = 1 if match[2] is None else int(match[2])
            new_left = 1 if match[4] is None else int(match[4])
            out.append(DiffLine("hunk", text))
        elif text.startswith("+"):
            out.append(DiffLine("add", text, new=new))
            new, new_left = new + 1, new_left - 1
        elif text.startswith("-"):
            out.append(DiffLine("remove", text, old=old))
            old, old_left = old + 1, old_left - 1
        elif text.startswith("\\"):
            out.append(DiffLine("note", text))
        else:
            out.append(DiffLine("context", text, old=old, new=new))
            old, new, old_left, new_left = old + 1, new + 1, old_left - 1, new_left - 1
    return out


def is_web(url: str) -> bool:
    """Only http(s) documentation links are shown as links: never a javascript: or file: URL."""
    return url.startswith(("https://", "http://"))


def diff_stats(diff: str) -> tuple[int, int]:
    """Lines added and removed by a unified diff."""
    kinds = [line.kind for line in diff_lines(diff)]
    return kinds.count("add"), kinds.count("remove")
