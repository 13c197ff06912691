"""``--statistics``: one line per rule with how often it fired, most frequent first, as ruff prints it."""

from __future__ import annotations

from collections import Counter
from typing import Any

from neuron_migrate.report.model import Report


def render(report: Report, rules: dict[str, dict[str, Any]]) -> str:
    live = [f for f in report.findings if not f.suppressed]
    counts = Counter(f.rule for f in live)
    applied = Counter(f.rule for f in live if f.applied)
    if not counts:
        return ""
    width = len(str(max(counts.values())))
    lines = []
    audit = report.mode in ("static", "runtime")  # the audit's modes; a rewrite reports "write", "diff" or "check"
    severity = {f.rule: f.severity for f in live}
    for rule, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        entry = rules.get(rule, {})
        how = "applied" if applied[rule] == count else "left" if not applied[rule] else f"{applied[rule]} applied"
        how = severity[rule] if audit else how
        safety = entry.get("safety", "")
        lines.append(f"{count:>{width}}  {rule:<6}  {'[' + safety + ']':<8}  {how:<10}  {entry.get('title', '')}".rstrip())
    return "\n".join(lines) + "\n"
