"""What a run prints: a progress bar and a summary on a terminal, plain greppable lines when piped.

On a terminal the summary is for a person: counts, the items that need a human, the reviewer checklist. Piped
(or with ``TERM=dumb``) every finding is one ``path:line:col: NMxxx [safety] message`` line, the format compilers
and linters use, so editors and ``grep`` understand it. ``NO_COLOR`` drops the colours and nothing else: the
layout stays the one of the terminal (rich's console honours the variable).
"""

from __future__ import annotations

import functools
import os
import re
import sys
import time
from typing import TYPE_CHECKING, TextIO

from neuron_migrate.report.model import EXCLUDED, FAILED, MANUAL, REVIEW, SAFE, SKIPPED, Finding, Report

# A progress bar is noise on a run that is over before a person can read it.
PROGRESS_DELAY_SECONDS = 0.5
PROGRESS_MANY_FILES = 50
# Past this many items the terminal lists the first ones and points at the report for the rest.
LIST_LIMIT = 40

_POSITION = re.compile(r"(?P<pos>\d+:\d+):\s*")

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

SAFETY_STYLE = {SAFE: "green", REVIEW: "yellow", MANUAL: "red"}
SEVERITY_STYLE = {"error": "red", "warning": "yellow", "info": "cyan"}


def is_plain(stream: TextIO) -> bool:
    """True when ``stream`` is not a terminal a person reads (``NO_COLOR`` is no reason: it only drops colours)."""
    if os.environ.get("TERM") == "dumb":
        return True
    isatty = getattr(stream, "isatty", None)
    return not (isatty and isatty())


def location(finding: Finding) -> str:
    """``path:line:col``; notebook findings name their cell the way ruff does (``nb.ipynb:cell 3:2:5``)."""
    where = finding.path if finding.cell is None else f"{finding.path}:cell {finding.cell}"
    return f"{where}:{finding.span.line}:{finding.span.column}"


def error_line(path: str, error: str) -> str:
    """``path: error: message``, or ``path:line:col: error: message`` when the error names a position."""
    error = error or "could not be processed"
    if error.startswith(f"{path}:"):
        error = error[len(path) + 1 :].lstrip()
    match = _POSITION.match(error)
    if match:
        return f"{path}:{match.group('pos')}: error: {error[match.end():]}"
    return f"{path}: error: {error}"


def finding_line(finding: Finding) -> str:
    return f"{location(finding)}: {finding.rule} [{finding.safety}] {finding.message}"


def needs_a_human(report: Report) -> list[Finding]:
    """The work left to a human, as every report counts it (``Report.needs_a_human``); edits to
    review are in the checklist and the review count."""
    return report.needs_a_human()


def _order(finding: Finding):
    return (finding.path, finding.cell or 0, finding.span.line, finding.span.column, finding.rule)


def _changed_word(mode: str) -> str:
    return "changed" if mode == "write" else "would change"


def audit_summary(report: Report) -> str:
    live = [f for f in report.findings if not f.suppressed]
    counts = {level: sum(1 for f in live if f.severity == level) for level in ("error", "warning", "info")}
    confirmed = sum(1 for f in live if f.evidence == "static+runtime")
    runtime = sum(1 for f in live if f.evidence == "runtime")
    parts = [f"{counts[level]} {level}" for level in counts]
    text = f"neuron-migrate audit: {len(report.files)} files, {', '.join(parts)}"
    if confirmed or runtime:
        text += f"; {confirmed} confirmed by the run, {runtime} seen only at run time"
    hidden = sum(1 for f in report.findings if f.suppressed)
    return text + (f"; {hidden} suppressed" if hidden else "")


def audit_line(finding: Finding) -> str:
    evidence = "" if finding.evidence == "static" else f" ({finding.evidence})"
    return f"{location(finding)}: {finding.rule} [{finding.severity}]{evidence} {finding.message}"


def audit_text(report: Report, notes=()) -> str:
    """The plain-text audit: one line per finding with its fix, then notes and the summary."""
    lines = []
    for f in sorted((f for f in report.findings if not f.suppressed), key=_order):
        lines.append(audit_line(f))
        if f.fix:
            lines.append(f"    fix: {f.fix}")
    for fr in report.files:
        if fr.status == FAILED:
            lines.append(error_line(fr.path, fr.error))
    lines.extend(notes)
    lines.append(audit_summary(report))
    return "\n".join(lines) + "\n"


def summary_line(report: Report) -> str:
    """The one line ``--quiet`` keeps."""
    t = report.totals()
    parts = [f"{t['files']} files", f"{t['changed']} {_changed_word(report.mode)}", f"{t['failed']} failed"]
    work = f"{t['edits']} edits ({t['review']} review{_with_todo(t)}), {t['manual']} manual"
    return f"neuron-migrate: {', '.join(parts)}; {work}"


class Terminal:
    """Prints one run. ``out`` gets findings and the summary (stderr when stdout carries a diff); errors always
    go to ``err``."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None, *, quiet: bool = False,
                 plain: bool | None = None) -> None:
        self.out = out if out is not None else sys.stdout
        self.err = err if err is not None else sys.stderr
        self.quiet = quiet
        self.plain = is_plain(self.out) if plain is None else plain

    @functools.cached_property
    def console(self) -> Console | None:
        # rich is imported only when a person's terminal shows something: a piped or quiet run prints plain lines.
        return None if self.plain else _console(self.out)

    # ----- progress ----------------------------------------------------------------------------
    def progress(self) -> RunProgress:
        console = None if self.plain or self.quiet else self.console
        return RunProgress(console)

    # ----- after the run -----------------------------------------------------------------------
    def errors(self, report: Report) -> None:
        for fr in report.files:
            if fr.status == FAILED:
                print(error_line(fr.path, fr.error), file=self.err)
            elif fr.status == SKIPPED and fr.error and fr.error != EXCLUDED:
                print(f"{fr.path}: skipped: {fr.error}", file=self.err)
        for warning in report.warnings:
            print(f"neuron-migrate: warning: {warning}", file=self.err)

    def show(self, report: Report, report_path: str | None = None) -> None:
        """Everything after the run: errors on stderr, then findings and summary."""
        self.errors(report)
        if self.quiet:
            print(summary_line(report), file=self.out)
        elif self.plain:
            self._plain(report, report_path)
        else:
            self._rich(report, report_path)

    def show_audit(self, report: Report, notes=(), fail_on: str = "warning", *, summary_only: bool = False) -> None:
        """An audit: findings with their fixes, grouped by file on a terminal; errors on stderr."""
        self.errors(report)
        if self.quiet or summary_only:
            for note in notes:
                print(note, file=self.out)
            print(audit_summary(report), file=self.out)
        elif self.plain:
            text = audit_text(report, notes)
            failed = [error_line(fr.path, fr.error) for fr in report.files if fr.status == FAILED]
            print("\n".join(line for line in text.splitlines() if line not in failed), file=self.out)
        else:
            self._rich_audit(report, notes)

    def _rich_audit(self, report: Report, notes) -> None:
        from rich.markup import escape

        console = self.console
        live = sorted((f for f in report.findings if not f.suppressed), key=_order)
        current = None
        for f in live[:LIST_LIMIT]:
            if f.path != current:
                current = f.path
                console.print(f"\n[bold]{escape(f.path)}[/]")
            style = SEVERITY_STYLE.get(f.severity, "")
            evidence = "" if f.evidence == "static" else f" [magenta]({f.evidence})[/]"
            where = f"cell {f.cell}:" if f.cell is not None else ""
            console.print(f"  {where}{f.span.line}:{f.span.column} [{style}]{f.rule}[/]{evidence} {escape(f.message)}")
            if f.fix:
                console.print(f"      [dim]fix:[/] {escape(f.fix)}")
        _more(console, len(live), "--format html --output audit.html")
        for note in notes:
            console.print(escape(note))
        console.print()
        console.print(escape(audit_summary(report)))

    def _plain(self, report: Report, report_path: str | None) -> None:
        lines = [finding_line(f) for f in sorted(report.findings, key=_order) if not f.suppressed]
        t = report.totals()
        lines.append(
            f"files: {t['files']} scanned, {t['changed']} {_changed_word(report.mode)}, "
            f"{t['failed']} failed, {t['skipped']} skipped"
        )
        lines.append(
            f"edits: {t['edits']} ({t['safe']} safe, {t['review']} review{_with_todo(t)}); "
            f"manual: {t['manual']}; suppressed: {t['suppressed']}"
        )
        checklist = report.checklist()
        if checklist:
            lines.append("checklist: " + ", ".join(f"{tag} {len(items)}" for tag, items in checklist.items()))
        if report_path:
            lines.append(f"report: {report_path}")
        print("\n".join(lines), file=self.out)

    def _rich(self, report: Report, report_path: str | None) -> None:
        from rich.markup import escape
        from rich.table import Table

        console = self.console
        t = report.totals()
        table = Table(title="neuron-migrate", show_header=False, title_justify="left", box=None, pad_edge=False)
        table.add_column(style="bold")
        table.add_column(justify="right")
        table.add_row("files scanned", str(t["files"]))
        table.add_row(_changed_word(report.mode), str(t["changed"]))
        table.add_row("failed", _count(t["failed"], "red"))
        if t["skipped"]:
            table.add_row("skipped", str(t["skipped"]))
        table.add_row("safe edits", _count(t["safe"], "green"))
        table.add_row("review edits", _count(t["review"], "yellow"))
        if t["with_todo"]:
            table.add_row("edits with a TODO", _count(t["with_todo"], "red"))
        table.add_row("manual", _count(t["manual"], "red"))
        if t["suppressed"]:
            table.add_row("suppressed", str(t["suppressed"]))
        console.print(table)

        items = needs_a_human(report)
        if items:
            console.print()
            console.print(f"[bold]Needs a human[/] ({len(items)})")
            for f in items[:LIST_LIMIT]:
                style = SAFETY_STYLE.get(f.safety, "")
                console.print(f"  {escape(location(f))} [{style}]{f.rule}[/] {escape(f.message)}")
            _more(console, len(items), "--report report.html")

        checklist = report.checklist()
        if checklist:
            console.print()
            check = Table(title="Reviewer checklist", title_justify="left", show_lines=False)
            check.add_column("risk")
            check.add_column("items", justify="right")
            check.add_column("where")
            for tag, findings in checklist.items():
                where = ", ".join(f"{location(f)} {f.rule}" for f in sorted(findings, key=_order)[:3])
                if len(findings) > 3:
                    where += f", +{len(findings) - 3} more"
                check.add_row(tag, str(len(findings)), escape(where))
            console.print(check)

        if report_path:
            console.print()
            console.print(f"Report written to [bold]{escape(report_path)}[/]")


def _with_todo(totals: dict[str, int]) -> str:
    """The edits that are neither safe nor review: done by a manual rule, which left a TODO beside them."""
    return f", {totals['with_todo']} with a TODO" if totals["with_todo"] else ""


def _count(value: int, style: str) -> str:
    return f"[{style}]{value}[/]" if value else "0"


def _console(out: TextIO) -> Console:
    from rich.console import Console

    return Console(file=out, highlight=False, soft_wrap=True)


def _more(console: Console, total: int, how: str) -> None:
    if total > LIST_LIMIT:
        console.print(f"  ... and {total - LIST_LIMIT} more (write them all with {how})")


# what the description, bar, count and clock columns of the progress bar take on a line
PROGRESS_FIXED_WIDTH = 70


class RunProgress:
    """The ``progress(done, total, path)`` callback of a run; the bar shows up only on long runs.

    It starts when the run has many files or has already taken more than a moment, so quick runs
    print nothing but their summary.
    """

    def __init__(self, console: Console | None, delay: float = PROGRESS_DELAY_SECONDS) -> None:
        self.console = console
        self.delay = delay
        self.started = time.monotonic()
        self.bar: Progress | None = None
        self.task = None

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def __call__(self, done: int, total: int, path=None) -> None:
        if self.console is None:
            return
        if self.bar is None:
            waited = time.monotonic() - self.started
            if total <= PROGRESS_MANY_FILES and waited < self.delay:
                return
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn("[progress.description]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[path]}", style="dim"),
                console=self.console,
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task("migrating", total=total, path="")
        self.bar.update(self.task, completed=done, total=total, path=self._fitted(str(path or "")))

    def _fitted(self, path: str) -> str:
        """The path's end (the file name matters most) within what the bar's other columns leave."""
        room = max(12, self.console.width - PROGRESS_FIXED_WIDTH)
        return path if len(path) <= room else "…" + path[-(room - 1):]
