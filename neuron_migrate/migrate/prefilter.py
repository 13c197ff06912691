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


# File kind (see migrate.discover.kind_of) -> the kinds of rule (RuleMeta.kind) that can change such a
# file, so that each file is scanned for their words only: a Python module that mentions `--output_dir`
# or `neuron` in a comment is not parsed because a launch-script or Dockerfile rule declared that word.
# Shell text also meets the requirement rules (its `pip install` lines) and the environment-variable
# rules (its `export` lines; they name "shell" in `Rule.also_edits`); a notebook holds Python, shell lines and `%pip`/`%env` magics; a
# Dockerfile's RUN lines are shell.
RULE_KINDS_READ: dict[str, tuple[str, ...]] = {
    "python": ("python",),
    "notebook": ("python", "notebook", "shell", "requirements"),
    "shell": ("shell", "requirements"),
    "dockerfile": ("dockerfile", "shell", "requirements"),
    "requirements": ("requirements",),
    "pyproject": ("requirements",),
    "setup_cfg": ("requirements",),
    "conda_env": ("requirements",),
}
# The words of a file kind this table does not know: every rule's, as a scan for the union never misses.
ANY_KIND = "*"


def words_by_file_kind(
    rules: Iterable[tuple[Iterable[str], Iterable[bytes]]], always: Iterable[bytes] = ()
) -> dict[str, tuple[bytes, ...]]:
    """``rules``: (the rule kinds a rule belongs to, its trigger words) -> the words each file kind is
    scanned for, plus ``always`` (words every kind needs). ``ANY_KIND`` holds the union."""
    always = set(always)
    by_rule_kind: dict[str, set[bytes]] = {}
    for kinds, words in rules:
        for kind in kinds:
            by_rule_kind.setdefault(kind, set()).update(words)
    union = set().union(*by_rule_kind.values(), always)
    out = {ANY_KIND: tuple(sorted(union))}
    for file_kind, reads in RULE_KINDS_READ.items():
        words = set(always).union(*(by_rule_kind.get(kind, ()) for kind in reads))
        out[file_kind] = tuple(sorted(words))
    return out


class KindPrefilter:
    """One :class:`Prefilter` per file kind, built from :func:`words_by_file_kind`'s table."""

    def __init__(self, words: dict[str, tuple[bytes, ...]]) -> None:
        self._by_kind = {kind: Prefilter(kind_words) for kind, kind_words in words.items()}
        self._any = self._by_kind.get(ANY_KIND) or Prefilter(w for ws in words.values() for w in ws)

    def __call__(self, kind: str, data: bytes) -> bool:
        """True when ``data``, a file of ``kind``, may need a rewrite."""
        return self._by_kind.get(kind, self._any)(data)
