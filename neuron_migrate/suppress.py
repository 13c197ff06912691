"""``# neuron-migrate: ignore`` / ``ignore[NM101,NA201]`` line comments, shared by rewrite and audit."""

from __future__ import annotations

import re

_IGNORE_RE = re.compile(r"#\s*neuron-migrate:\s*ignore(?:\[(?P<ids>[A-Za-z0-9_,\s]+)\])?")


def suppressed_lines(source: str) -> dict[int, frozenset[str] | None]:
    """Line number -> rule ids ignored on it (``None`` = every rule)."""
    out: dict[int, frozenset[str] | None] = {}
    if "neuron-migrate:" not in source:
        return out
    for number, line in enumerate(source.splitlines(), start=1):
        match = _IGNORE_RE.search(line)
        if not match:
            continue
        ids = match.group("ids")
        out[number] = None if ids is None else frozenset(i.strip().upper() for i in ids.split(",") if i.strip())
    return out


def is_suppressed(suppressed: dict[int, frozenset[str] | None], rule_id: str, lines) -> bool:
    for line in lines:
        if line in suppressed:
            ids = suppressed[line]
            if ids is None or rule_id in ids:
                return True
    return False


def unknown_ids(source: str, known: set[str]) -> list[tuple[int, str]]:
    """(line, id) of every id an ignore comment names that is no rule or hazard id (a typo silences nothing)."""
    return sorted(
        (line, rule_id)
        for line, ids in suppressed_lines(source).items()
        for rule_id in ids or ()
        if rule_id not in known
    )
