"""The report model: plain dataclasses that every renderer reads and the JSON schema describes.

Renderers never compute anything the model does not hold; the engine never formats text for a
particular output. Bump ``SCHEMA_VERSION`` whenever a field changes meaning or disappears.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

SCHEMA_VERSION = "1.1"

SAFE = "safe"
REVIEW = "review"
MANUAL = "manual"
SAFETIES = (SAFE, REVIEW, MANUAL)

# Severity of a finding for --fail-on and SARIF levels. Edits are "info"-level facts, manual
# findings are warnings: something a human still has to do.
INFO = "info"
WARNING = "warning"
ERROR = "error"
SEVERITIES = (INFO, WARNING, ERROR)

RISK_TAGS = ("numerics", "collectives", "checkpoint-format", "launch", "rng", "performance")

# File outcomes.
UNCHANGED = "unchanged"
CHANGED = "changed"
FAILED = "failed"
SKIPPED = "skipped"


@dataclass(frozen=True)
class Span:
    """1-based lines and 1-based columns, end inclusive of the last character's column + 1."""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass
class Finding:
    """One thing the tool did or wants a human to do, tied to a source span."""

    rule: str
    message: str
    path: str
    span: Span
    safety: str
    applied: bool
    severity: str = INFO
    risks: tuple[str, ...] = ()
    before: str = ""
    after: str = ""
    fix: str = ""
    cell: int | None = None
    evidence: str = "static"
    suppressed: bool = False
    fingerprint: str = ""

    def finalize(self) -> Finding:
        if not self.fingerprint:
            self.fingerprint = fingerprint(self.rule, self.path, self.before or self.message, self.cell)
        return self

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["risks"] = list(self.risks)
        return data


def fingerprint(rule: str, path: str, anchor: str, cell: int | None = None) -> str:
    """Stable across runs and line moves: rule, file and the code the finding is about."""
    normalized = " ".join(anchor.split())
    raw = f"{rule}\x00{path}\x00{cell}\x00{normalized}".encode()
    return hashlib.sha256(raw).hexdigest()[:16]


@dataclass
class FileResult:
    path: str
    status: str = UNCHANGED
    findings: list[Finding] = field(default_factory=list)
    diff: str = ""
    error: str = ""
    cached: bool = False
    # What `rewrite --diff` prints when ``diff`` is not a patch `git apply` takes (a notebook's diff is per cell):
    # the unified diff of the file's own text. Not part of the JSON report.
    patch: str = ""

    @property
    def edits(self) -> list[Finding]:
        return [f for f in self.findings if f.applied and not f.suppressed]

    @property
    def manual(self) -> list[Finding]:
        """Work left to a human (see ``totals``): not applied, or applied with a TODO."""
        return [f for f in self.findings if (not f.applied or f.safety == MANUAL) and not f.suppressed]

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "status": self.status,
            "error": self.error,
            "diff": self.diff,
            "cached": self.cached,
            "findings": [f.to_dict() for f in self.findings],
        }


@dataclass
class Report:
    tool_version: str
    command: str
    mode: str
    files: list[FileResult] = field(default_factory=list)
    rules: dict[str, dict[str, Any]] = field(default_factory=dict)
    duration_seconds: float = 0.0

    @property
    def findings(self) -> list[Finding]:
        return [f for fr in self.files for f in fr.findings]

    def count(self, status: str) -> int:
        return sum(1 for fr in self.files if fr.status == status)

    def totals(self) -> dict[str, int]:
        findings = [f for f in self.findings if not f.suppressed]
        return {
            "files": len(self.files),
            "changed": self.count(CHANGED),
            "failed": self.count(FAILED),
            "skipped": self.count(SKIPPED),
            "edits": sum(1 for f in findings if f.applied),
            "safe": sum(1 for f in findings if f.applied and f.safety == SAFE),
            "review": sum(1 for f in findings if f.applied and f.safety == REVIEW),
            # Work left to a human: what was not done, and what was done but left a TODO (a removed
            # requirement whose code must still be ported).
            "manual": sum(1 for f in findings if not f.applied or f.safety == MANUAL),
            "suppressed": sum(1 for f in self.findings if f.suppressed),
        }

    def checklist(self) -> dict[str, list[Finding]]:
        """Risk tag -> the findings a reviewer must look at for it (applied review edits and manual items)."""
        out: dict[str, list[Finding]] = {}
        for f in self.findings:
            if f.suppressed or f.safety == SAFE:
                continue
            for tag in f.risks:
                out.setdefault(tag, []).append(f)
        return {tag: out[tag] for tag in RISK_TAGS if tag in out}

    def exit_code(self) -> int:
        if self.count(FAILED):
            return 2
        # Like pyupgrade: 1 means "files changed or would change". Manual items that are already
        # marked in the code do not fail every later run; the audit's --fail-on gates on those.
        return 1 if self.count(CHANGED) else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "neuron-migrate", "version": self.tool_version},
            "command": self.command,
            "mode": self.mode,
            "duration_seconds": round(self.duration_seconds, 3),
            "totals": self.totals(),
            "rules": self.rules,
            "checklist": {tag: [f.fingerprint for f in fs] for tag, fs in self.checklist().items()},
            "files": [fr.to_dict() for fr in self.files],
        }
