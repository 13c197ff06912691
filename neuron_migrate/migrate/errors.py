"""The two ways a file's rewrite fails: the input's fault and the tool's. A module of their own, so the
engine that raises them and the source adapters that report them do not import each other."""

from __future__ import annotations


class SourceError(Exception):
    """A file this tool will not rewrite: it cannot be turned into text (or back), its format's reader
    refuses it, or it would not print back exactly. The message starts with ``line:col: `` when a place
    is known; ``sources.guarded`` adds the path and says that the file was left unchanged."""


class InternalError(Exception):
    """A rule produced code that does not parse; carries the rule ids that touched the file."""
