"""The comments the rewrite leaves in code, written and read in one place.

Two kinds, for every file kind (Python, notebooks, shell scripts, Dockerfiles, requirement files):

- ``# TODO(neuron-migrate NM123): <next step>``: work left to a human (the rule's safety is manual);
- ``# neuron-migrate(NM123): <what to check>``: an edit made that a human should review.

A use further down a long statement carries a short tag naming the TODOs above it:
``# TODO(neuron-migrate NM123, NM124): see above``.

Everything that reads markers back (a rerun dropping its own stale TODOs, a notebook keeping a
marker with the shell line below it, ``verify`` explaining a divergence, the HTML report colouring
them, rules that must not answer a site a second way) reads them with :func:`parse`, so the format
lives here only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Same value as report.model.MANUAL: a marker of a manual outcome is a TODO (this module sits
# beside report, below every writer and reader of markers).
_MANUAL = "manual"
_TODO = "TODO(neuron-migrate {ids})"
_REVIEW = "neuron-migrate({ids})"
TAG_TEXT = "see above"

# The one pattern: a TODO (one rule, or a tag's list of rules) or a review note, then its text.
PATTERN = (
    r"#\s*(?:TODO\(neuron-migrate (?P<todo>NM\d+(?:, NM\d+)*)\)|neuron-migrate\((?P<review>NM\d+)\))"
    r":\s*(?P<text>.*)"
)
_MARKER = re.compile(PATTERN)


@dataclass(frozen=True)
class Marker:
    """A marker comment read back: its rules (one, or several for a line tag), whether it is a TODO,
    its text, and where in the line it starts."""

    rules: tuple[str, ...]
    todo: bool
    text: str
    start: int = 0

    @property
    def rule(self) -> str:
        """The rule of a marker about one rule ("" for a line tag naming several)."""
        return self.rules[0] if len(self.rules) == 1 else ""


def text(rule_id: str, safety: str, message: str) -> str:
    """The comment, without its ``#``, that goes next to a site: a TODO with the next step for work
    left to a human, a review note for an edit a human should check."""
    form = _TODO if safety == _MANUAL else _REVIEW
    return form.format(ids=rule_id) + ": " + message


def comment(rule_id: str, safety: str, message: str) -> str:
    return "# " + text(rule_id, safety, message)


def tag(rule_ids: list[str]) -> str:
    """The end-of-line tag of a use below the TODOs of ``rule_ids``, which stand above its statement."""
    return "# " + _TODO.format(ids=", ".join(rule_ids)) + ": " + TAG_TEXT


def parse(comment_text: str) -> Marker | None:
    """The marker ``comment_text`` is (leading blanks allowed), or None."""
    match = _MARKER.match(comment_text.lstrip(" \t"))
    return _marker(match, len(comment_text) - len(comment_text.lstrip(" \t"))) if match else None


def find(line: str) -> Marker | None:
    """The first marker anywhere in ``line`` (after code, in a shell script, in a notebook cell), or None."""
    match = _MARKER.search(line)
    return _marker(match, 0) if match else None


def mentions(source: str, rule_id: str, *, todo_only: bool = False) -> bool:
    """Whether ``source`` holds a marker of ``rule_id`` (only its TODO with ``todo_only``): a cheap
    text test for rules that must not answer, on a rerun, a site their marker already answers."""
    if _TODO.format(ids=rule_id) in source:
        return True
    return not todo_only and _REVIEW.format(ids=rule_id) in source


def _marker(match: re.Match, offset: int) -> Marker:
    todo = match.group("todo")
    rules = tuple(todo.split(", ")) if todo else (match.group("review"),)
    return Marker(rules, bool(todo), match.group("text"), match.start() + offset)
