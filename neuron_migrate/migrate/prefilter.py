"""A byte scan that tells which files could interest a rule at all, before anything is parsed.

Every rule declares trigger words (``torch_xla``, ``XLA_``, ``NEURON_CC_FLAGS``...). A file that
contains none of them cannot change, so it is reported unchanged without decoding or parsing it.
The words are ASCII, so the scan works on the raw bytes of any ASCII-compatible encoding a coding
cookie may declare.
"""

from __future__ import annotations

from collections.abc import Iterable

# Words are grouped by their first bytes: a group is looked at only when that prefix occurs, so a
# clean file costs one scan per group instead of one per word.
PREFIX = 4


class Prefilter:
    def __init__(self, triggers: Iterable[bytes]) -> None:
        words = sorted({w for w in triggers if w})
        # A word that contains another word adds nothing: "torch_xla" is found wherever "xla" is.
        self.triggers = tuple(w for w in words if not any(o != w and o in w for o in words))
        groups: dict[bytes, list[bytes]] = {}
        for word in self.triggers:
            groups.setdefault(word[:PREFIX], []).append(word)
        self._groups = tuple(
            (prefix, tuple(group)) if len(group) > 1 else (group[0], ()) for prefix, group in sorted(groups.items())
        )

    def __call__(self, data: bytes) -> bool:
        """True when ``data`` may need a rewrite."""
        # `in` per word beats a compiled alternation about five-fold: bytes.find uses a vectorised
        # substring search, while re tries the alternation at every offset.
        for first, rest in self._groups:
            if first in data and (not rest or any(word in data for word in rest)):
                return True
        return False
