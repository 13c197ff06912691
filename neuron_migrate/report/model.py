"""The report model: plain dataclasses that every renderer reads and the JSON schema describes.

Renderers never compute anything the model does not hold; the engine never formats text for a
particular output. Bump ``SCHEMA_VERSION`` whenever a field changes meaning or disappears.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

SCHEMA_VERSION = "1.2"

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
# The reason of a file skipped because the configuration excludes it: the user asked for that, so the
# terminal says nothing about it (pre-commit passes excluded files by name on every commit).
EXCLUDED = "excluded by the configuration"


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
            self.fingerprint = fingerprint(self.rule, self.path, self.anchor, self.cell)
        return self

    @property
    def anchor(self) -> str:
        """The code the finding is about (its message when it has none): what the fingerprint hashes."""
        return " ".join((self.before or self.message).split())

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["risks"] = list(self.risks)
        return data


def fingerprint(rule: str, path: str, anchor: str, cell: int | None = None, occurrence: int = 0) -> str:
    """Stable across runs and line moves: rule, file, the code the finding is about and, for the
    second and later finding of a rule on the same code in a file, which one it is (0-based). The
    first keeps the hash it had before occurrences were counted."""
    normalized = " ".join(anchor.split())
    raw = f"{rule}\x00{path}\x00{cell}\x00{normalized}"
    if occurrence:
        raw += f"\x00{occurrence}"
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def position(f: Finding) -> tuple[int, int, int]:
    """Sort key within a file: notebook cell, then line and column, so findings read top to bottom."""
    return (f.cell or 0, f.span.line, f.span.column)


def number_findings(findings: Iterable[Finding]) -> None:
    """Give each finding its fingerprint, counting repeats: two ``xm.mark_step()`` lines of one file
    are occurrences 0 and 1 of the same code, so they get two fingerprints. A line inserted above
    either leaves every fingerprint as it was; only a new copy of the same code adds one. Suppressed
    findings are counted too, so silencing one does not renumber the others."""
    seen: dict[tuple[str, str, int | None, str], int] = {}
    for f in sorted(findings, key=lambda f: (f.path, *position(f), f.rule)):
        key = (f.rule, f.path, f.cell, f.anchor)
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        f.fingerprint = fingerprint(f.rule, f.path, f.anchor, f.cell, occurrence)


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
    # Problems with the run's own input that are not findings (an ignore comment naming no known id);
    # the terminal prints them as warnings.
    warnings: list[str] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        return [f for fr in self.files for f in fr.findings]

    def needs_a_human(self) -> list[Finding]:
        """Work left to a human, file by file, top to bottom: findings not applied and applied edits
        that left a TODO. Every renderer lists and counts this one list; ``totals()["manual"]`` is its length."""
        return [f for fr in self.files for f in sorted(fr.manual, key=position)]

    def complete(self) -> Report:
        """Called once by whatever builds the report, when its last finding is in: every output keys
        findings by fingerprint, and repeats of the same code in a file are only told apart once the
        whole file's findings are known. Renderers read the result and change nothing."""
        number_findings(self.findings)
        return self

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
            # The third kind of edit: done, but its rule is "manual", so it left a TODO (also counted in manual).
            "with_todo": sum(1 for f in findings if f.applied and f.safety not in (SAFE, REVIEW)),
            # Work left to a human: what was not done, and what was done but left a TODO (a removed
            # requirement whose code must still be ported).
            "manual": len(self.needs_a_human()),
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
