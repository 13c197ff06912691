"""Dockerfiles: the shell rules on ``RUN`` and ``ENV``, and TODOs for what only a human can change.

A Dockerfile is not shell, but the parts of it that carry the legacy stack mostly are: a shell-form
``RUN`` is a shell command (``pip install torch-neuronx==2.1.* torch-xla``) and ``ENV A=1 B=2`` reads
like shell assignments. The adapter builds a view of the file of the same length in which

- the ``RUN`` keyword (with its ``--mount=...`` flags) and the ``ENV`` keyword become spaces, and so do
  the ``RUN <<EOF`` line and the ``EOF`` line around a heredoc script; an old-form ``ENV NAME value``
  reads as ``NAME=value``,
- every other instruction becomes comment lines, and a comment line inside a continued ``RUN``
  becomes a bare continuation (Docker drops those lines; the shell must not end the command there),

runs the shell rules (:mod:`~neuron_migrate.rules.launch_scripts`) on that view, and applies their
edits to the real text: positions in the view are positions in the file. An ``export X=1`` line a
rule inserts becomes ``ENV X=1``.

What the view hides is read by the Dockerfile rules (:mod:`~neuron_migrate.rules.dockerfiles`)
instead: a base image of the XLA era (NM521), and any other instruction that names a legacy
variable, command or package (NM520), get a TODO marker above them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from neuron_migrate.migrate.shell import ShellEdits, ShellScript, apply_edits
from neuron_migrate.migrate.sources import Outcome, SourceError, decode_text, text_adapter
from neuron_migrate.ruleapi import hooks_for
from neuron_migrate.suppress import suppressed_lines

if TYPE_CHECKING:
    from neuron_migrate.migrate.engine import RulePlan

__all__ = ["Dockerfile", "Instruction", "rewrite_dockerfile"]

_KEYWORD = re.compile(r"[ \t]*([A-Za-z]+)")
_RUN_FLAGS = re.compile(r"(?:[ \t]+--[^\s]+)*[ \t]*")
_HEREDOC = re.compile(r"<<(-?)[\"']?([A-Za-z_][\w.-]*)[\"']?")
_ENV_ASSIGNMENT = re.compile(r"[ \t]+([A-Za-z_][A-Za-z0-9_]*)=")
_ENV_OLD_FORM = re.compile(r"[ \t]+([A-Za-z_][A-Za-z0-9_]*)([ \t])[^\s\\]+[ \t]*")
# RUN <<EOF alone on its line: the lines up to EOF are a shell script.
_SCRIPT = re.compile(_HEREDOC.pattern + r"[ \t]*")
_ESCAPE_DIRECTIVE = re.compile(r"#[ \t]*escape[ \t]*=[ \t]*`", re.IGNORECASE)


class DockerfileError(SourceError, ValueError):
    """A Dockerfile this adapter does not read the way Docker would."""


@dataclass
class Instruction:
    keyword: str  # upper case
    lines: list[tuple[int, int]]  # physical lines as (start, end), end before the newline
    # How the view shows it: "shell" (a shell-form RUN), "script" (RUN <<EOF with a shell script up to
    # EOF), "env" (ENV NAME=value ...) or "hidden".
    form: str = "hidden"
    body_start: int = 0  # "shell" / "script" / "env": where the text the shell rules read begins
    body_end: int = 0  # "script": where it ends (the delimiter line starts there)
    separator: int = -1  # an old-form ENV NAME value: the blank the view shows as "="

    @property
    def start(self) -> int:
        return self.lines[0][0]

    @property
    def end(self) -> int:
        return self.lines[-1][1]


@dataclass
class Dockerfile:
    text: str
    instructions: list[Instruction] = field(default_factory=list)
    view: str = ""

    @classmethod
    def parse(cls, text: str) -> Dockerfile:
        lines = _physical_lines(text)
        if any(_ESCAPE_DIRECTIVE.match(text[s:e]) for s, e in lines[:5]):
            raise DockerfileError("1:1: the escape=` parser directive is not supported")
        dockerfile = cls(text, _instructions(text, lines))
        dockerfile.view = _view(text, dockerfile.instructions)
        return dockerfile


def _physical_lines(text: str) -> list[tuple[int, int]]:
    out, start = [], 0
    for match in re.finditer(r"\r?\n", text):
        out.append((start, match.start()))
        start = match.end()
    if start < len(text):
        out.append((start, len(text)))
    return out


def _instructions(text: str, lines: list[tuple[int, int]]) -> list[Instruction]:
    out: list[Instruction] = []
    i = 0
    while i < len(lines):
        start, end = lines[i]
        stripped = text[start:end].strip()
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        j = _continuation_end(text, lines, i)
        j = _heredoc_end(text, lines, i, j)
        keyword = _KEYWORD.match(text, start)
        instruction = Instruction(keyword.group(1).upper() if keyword else "", lines[i : j + 1])
        _classify(text, instruction)
        out.append(instruction)
        i = j + 1
    return out


def _continuation_end(text: str, lines: list[tuple[int, int]], first: int) -> int:
    """The last line of the instruction starting on line ``first``: a line ending in ``\\`` goes on,
    and comment and blank lines inside an instruction neither end nor continue it."""
    last = first
    going_on = text[lines[first][0] : lines[first][1]].rstrip().endswith("\\")
    while going_on and last + 1 < len(lines):
        last += 1
        line = text[lines[last][0] : lines[last][1]].strip()
        if line and not line.startswith("#"):
            going_on = line.endswith("\\")
    return last


def _heredoc_end(text: str, lines: list[tuple[int, int]], first: int, last: int) -> int:
    """The last line of an instruction whose lines ``first..last`` open heredocs (``RUN <<EOF``)."""
    head = " ".join(text[s:e] for s, e in lines[first : last + 1])
    for match in _HEREDOC.finditer(head):
        strip, delimiter = match.group(1), match.group(2)
        while last + 1 < len(lines):
            last += 1
            line = text[lines[last][0] : lines[last][1]]
            if (line.lstrip("\t") if strip else line) == delimiter:
                break
    return last


def _view(text: str, instructions: list[Instruction]) -> str:
    view = list(text)
    for instruction in instructions:
        if instruction.form == "hidden":
            for start, end in instruction.lines:
                if end > start:
                    view[start] = "#"
            continue
        # A script's first line (RUN <<EOF) is blanked up to its newline, which stays.
        masked_to = instruction.lines[0][1] if instruction.form == "script" else instruction.body_start
        for k in range(instruction.start, masked_to):
            view[k] = " "
        if instruction.form == "script":
            for k in range(instruction.body_end, instruction.end):
                view[k] = " "
            continue
        if instruction.separator >= 0:
            view[instruction.separator] = "="
        for start, end in instruction.lines[1:]:
            # Docker drops comment lines inside an instruction; for the shell they would end it.
            if text[start:end].lstrip().startswith("#"):
                view[start:end] = [" "] * (end - start - 1) + ["\\"]
    return "".join(view)


def _classify(text: str, instruction: Instruction) -> None:
    """Set how the view shows ``instruction``: its form, and where the shell text starts."""
    keyword_end = _KEYWORD.match(text, instruction.start).end()
    if instruction.keyword == "RUN":
        body = _RUN_FLAGS.match(text, keyword_end).end()
        first_line = text[instruction.start : instruction.lines[0][1]]
        script = _SCRIPT.fullmatch(text, body, instruction.lines[0][1])
        if script and len(instruction.lines) > 2 and _closes(text, instruction, script):
            instruction.form, instruction.body_start = "script", instruction.lines[1][0]
            instruction.body_end = instruction.lines[-1][0]
        elif text[body : body + 1] not in ("[", "") and not _HEREDOC.search(first_line):
            instruction.form, instruction.body_start = "shell", body
    elif instruction.keyword == "ENV":
        # ENV NAME=value ... reads as shell assignments. So does the old ENV NAME value form when the
        # value is one word: the view writes the gap between them as "=".
        assignment = _ENV_ASSIGNMENT.match(text, keyword_end)
        old_form = _ENV_OLD_FORM.fullmatch(text, keyword_end, instruction.end) if len(instruction.lines) == 1 else None
        if assignment:
            instruction.form, instruction.body_start = "env", assignment.start(1)
        elif old_form:
            instruction.form, instruction.body_start = "env", old_form.start(1)
            instruction.separator = old_form.start(2)


def _closes(text: str, instruction: Instruction, script: re.Match) -> bool:
    """Whether the last line of ``instruction`` is the delimiter its ``<<DELIM`` opened."""
    start, end = instruction.lines[-1]
    line = text[start:end]
    return (line.lstrip("\t") if script.group(1) else line) == script.group(2)


# ----- the adapter --------------------------------------------------------------------------------------------


def migrate_dockerfile_text(text: str, path: str, plan: RulePlan, *, no_comments: bool = False):
    """The migrated text and the findings of one Dockerfile."""
    apply_rules, apply_dockerfile_rules = hooks_for("shell"), hooks_for("dockerfile")
    dockerfile = Dockerfile.parse(text)
    script = ShellScript(dockerfile.view, path)
    edits = ShellEdits(script, {rule.meta.id for rule in plan.index.rules}, no_comments, None)
    _ignore_comments_above(dockerfile, edits)
    apply_rules(script, edits, plan)
    apply_dockerfile_rules(dockerfile, edits)
    scripts = [(i.body_start, i.body_end) for i in dockerfile.instructions if i.form == "script"]
    old_values = {i.separator + 1 for i in dockerfile.instructions if i.separator >= 0}
    changes = [_as_instruction(edit, scripts, old_values) for edit in edits.edits()]
    return apply_edits(text, changes, edits.protected()), _quote_the_file(edits.findings, dockerfile)


def _quote_the_file(findings: list, dockerfile: Dockerfile) -> list:
    """Findings quote the code they are about from the view, where a masked keyword reads ``#ROM``:
    quote the file instead (same positions), and fingerprint what was quoted."""
    starts = [0] + [i + 1 for i, char in enumerate(dockerfile.text) if char == "\n"]
    for finding in findings:
        span = finding.span
        start, end = starts[span.line - 1] + span.column - 1, starts[span.end_line - 1] + span.end_column - 1
        real = " ".join(dockerfile.text[start:end].split())
        if real != finding.before and finding.before == " ".join(dockerfile.view[start:end].split()):
            finding.before, finding.fingerprint = real, ""
            finding.finalize()
    return findings


def _ignore_comments_above(dockerfile: Dockerfile, edits: ShellEdits) -> None:
    """Most instructions cannot carry a trailing comment (``ENV`` and ``ARG`` would take it as part of
    the value), so an ignore comment on its own line applies to the instruction below it."""
    marks = suppressed_lines(dockerfile.text)
    if not marks:
        return
    text = dockerfile.text
    for instruction in dockerfile.instructions:
        first = text.count("\n", 0, instruction.start) + 1
        above = text[text.rfind("\n", 0, max(instruction.start - 1, 0)) + 1 : instruction.start].strip()
        if first - 1 in marks and above.startswith("#"):
            last = first + text.count("\n", instruction.start, instruction.end)
            edits.suppress(range(first, last + 1), marks[first - 1])


def _as_instruction(
    edit: tuple[int, int, str, int], scripts: list[tuple[int, int]], old_values: set[int]
) -> tuple[int, int, str, int]:
    """A line a shell rule inserts (``export X=1``) as the Dockerfile instruction it stands for,
    unless it goes inside the script of a ``RUN <<EOF``, where it is shell. An old-form
    ``ENV NAME value`` cannot have an empty value: an emptied one is written ``""``."""
    start, end, new, order = edit
    if start in old_values and not new.strip():
        return (start, end, '""', order)
    if start != end or any(s <= start < e for s, e in scripts):
        return edit
    # Inserted lines take the indentation of the view, where a masked keyword is blank: a Dockerfile
    # instruction or comment starts the line.
    lines = [line.lstrip(" \t") for line in new.splitlines(keepends=True)]
    lines = ["ENV " + line[len("export ") :] if line.startswith("export ") else line for line in lines]
    return (start, end, "".join(lines), order)


def _migrate_dockerfile(text: str, path: str, plan: RulePlan, no_comments: bool):
    return migrate_dockerfile_text(text, path, plan, no_comments=no_comments)


def rewrite_dockerfile(data: bytes, path: str, plan: RulePlan, no_comments: bool) -> Outcome:
    """One Dockerfile, on the one outcome path (see sources.guarded)."""
    return text_adapter(decode_text, _migrate_dockerfile)(data, path, plan, no_comments)
