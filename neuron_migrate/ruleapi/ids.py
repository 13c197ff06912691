"""The ids ``--select``, ``--ignore`` and ignore comments may name: rewrite rules and audit hazards."""

from __future__ import annotations

import difflib

from neuron_migrate.ruleapi.registry import all_rules

# Letters typed for the digits they look like ("NM11O" for NM110).
_LOOKALIKES = str.maketrans({"O": "0", "I": "1", "L": "1"})


def known_ids() -> list[str]:
    """Rewrite rule ids and audit hazard ids: both are valid in --select / --ignore."""
    from neuron_migrate.analyzers.hazards import HAZARDS

    return [rule.meta.id for rule in all_rules()] + list(HAZARDS)


def close_ids(text: str, limit: int = 5) -> list[str]:
    """Known rule ids that look like ``text``: ids it is a prefix of first, then spelling neighbours."""
    wanted = text.strip().upper()
    if wanted[:2] == "NM":
        wanted = "NM" + wanted[2:].translate(_LOOKALIKES)
    ids = known_ids()
    prefixed = [i for i in ids if wanted and i.startswith(wanted)]
    similar = difflib.get_close_matches(wanted, ids, n=limit, cutoff=0.6)
    out = list(dict.fromkeys([*prefixed, *similar]))
    return out[:limit]


def unknown_selectors(selectors) -> list[str]:
    """The ``--select``/``--ignore`` entries that match no rule id as an id or a prefix."""
    if not selectors:
        return []
    ids = known_ids()
    bad = []
    for selector in selectors:
        wanted = selector.strip().upper()
        if wanted == "ALL" or any(i.startswith(wanted) for i in ids):
            continue
        bad.append(selector)
    return bad
