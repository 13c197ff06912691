"""What every file kind says about its rules' work, said one way: findings, marker texts, suppression.

Python modules, notebook cells, shell scripts, Dockerfiles and requirement files place their markers
differently (above a statement, above a command, above a requirement line), but what a finding holds,
what a marker reads, which comments silence a rule and the severity of each outcome are the same for
all of them, and are decided here. Each kind's context holds one :class:`Reporter` for its file.
"""

from __future__ import annotations

from collections.abc import Iterable

from neuron_migrate import markers
from neuron_migrate.report.model import INFO, WARNING, Finding, Span
from neuron_migrate.ruleapi.rule import RuleMeta
from neuron_migrate.suppress import is_suppressed, suppressed_lines

SUPPRESSED = "{title} (suppressed by comment)"


# The marker format is the markers module's; rules reach it through the rule API under these names.
marker_text = markers.text
marker_comment = markers.comment


def severity_of(applied: bool) -> str:
    """An edit made is information; a site left for a human is a warning. (The audit raises legacy
    sites to errors itself; a report-only note passes its own severity.)"""
    return INFO if applied else WARNING


class Reporter:
    """The findings of one file (or notebook cell) and the suppression comments it carries."""

    __slots__ = ("path", "cell", "findings", "_suppressed")

    def __init__(self, path: str, text: str, *, cell: int | None = None) -> None:
        self.path = path
        self.cell = cell
        self.findings: list[Finding] = []
        self._suppressed = suppressed_lines(text)

    # -- suppression ---------------------------------------------------------------------------------
    @property
    def has_suppressions(self) -> bool:
        """Whether the file has any ignore comment (most have none: no line sets to build)."""
        return bool(self._suppressed)

    def suppresses(self, rule_id: str, lines: Iterable[int]) -> bool:
        """Whether an ignore comment on one of ``lines`` (1-based) silences ``rule_id``."""
        return self.has_suppressions and is_suppressed(self._suppressed, rule_id, lines)

    def suppress(self, lines: Iterable[int], ids: frozenset[str] | None) -> None:
        """Treat ``lines`` as carrying an ignore comment for ``ids`` (None: every rule)."""
        for line in lines:
            self._suppressed.setdefault(line, ids)

    # -- findings ------------------------------------------------------------------------------------
    def report(
        self,
        meta: RuleMeta,
        span: Span,
        message: str,
        safety: str,
        *,
        applied: bool,
        before: str,
        after: str = "",
        fix: str = "",
        marker: str = "",
        marker_safety: str = "",
        severity: str = "",
        suppressed: bool = False,
    ) -> str:
        """The one call every file kind makes for what a rule did or left at ``span``: the finding, and
        the text (without ``#``) of the marker ``marker`` asks for ("" for none), written as a TODO when
        ``marker_safety`` (else ``safety``) is manual and as a review note otherwise. Where the marker
        goes is the file kind's business (above a statement, a command, a requirement line). A finding
        a suppression comment silenced (``suppressed``) is recorded as such and gets no marker."""
        self.add(
            meta, span, message, safety, applied=applied, before=before, after=after, fix=fix, severity=severity,
            suppressed=suppressed,
        )
        return markers.text(meta.id, marker_safety or safety, marker) if marker and not suppressed else ""

    def add(
        self,
        meta: RuleMeta,
        span: Span,
        message: str,
        safety: str,
        *,
        applied: bool,
        before: str,
        after: str = "",
        fix: str = "",
        suppressed: bool = False,
        severity: str = "",
    ) -> Finding:
        finding = Finding(
            rule=meta.id,
            message=message,
            path=self.path,
            span=span,
            safety=safety,
            applied=applied,
            severity=severity or severity_of(applied),
            risks=tuple(sorted(meta.risks)),
            before=before,
            after=after,
            fix=fix,
            cell=self.cell,
            suppressed=suppressed,
        ).finalize()
        self.findings.append(finding)
        return finding

    def skipped(self, meta: RuleMeta, span: Span, before: str) -> Finding:
        """The rule would act here, but a suppression comment says no."""
        return self.add(
            meta, span, SUPPRESSED.format(title=meta.title), meta.safety, applied=False, before=before, suppressed=True
        )
