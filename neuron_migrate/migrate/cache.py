"""Content-hash cache: a file whose bytes, path, tool and settings were seen before is not parsed again.

An entry's key hashes everything that decides the outcome: the file's bytes and the path it is
reported under (findings carry it), the tool version plus a fingerprint of the installed package
source (so editing a rule during development invalidates entries without a version bump), the
configuration's fingerprint, the ids of the selected rules and the trigger words of the file's
kind (see ``migrate/prefilter.py``). The value is the outcome: the new
bytes or "unchanged", the findings and the diff (or a note that the run that made it computed none:
such an entry does not serve a run that shows diffs). Entries are written atomically; an entry that
cannot be read or decoded is a miss, never an error.

The run's rule plan is cached the same way (ids, trigger words, metadata for the report), so a
run whose files are all clean or all cached never imports LibCST or the rule modules.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuron_migrate import __version__
from neuron_migrate.migrate import neighbors
from neuron_migrate.migrate.prefilter import ANY_KIND
from neuron_migrate.migrate.sources import Outcome
from neuron_migrate.report.model import CHANGED, UNCHANGED, Finding, Span

FORMAT = "v1"


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Version plus size and mtime of every module of the installed package: a stat per file."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(__version__.encode())
    for folder, dirnames, filenames in os.walk(package):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".py", ".json")):
                full = os.path.join(folder, name)
                st = os.stat(full)
                digest.update(f"{os.path.relpath(full, package)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:20]


@dataclass(frozen=True)
class PlanSummary:
    """What a run needs to know about its rules before any file is parsed."""

    ids: tuple[str, ...]
    triggers: dict[str, tuple[bytes, ...]]  # file kind -> the words its files are scanned for (see prefilter)
    rules: dict[str, dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {
            "ids": list(self.ids),
            "triggers": {kind: [t.decode("latin-1") for t in words] for kind, words in self.triggers.items()},
            "rules": self.rules,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PlanSummary:
        return cls(
            ids=tuple(data["ids"]),
            triggers={kind: tuple(t.encode("latin-1") for t in words) for kind, words in data["triggers"].items()},
            rules=dict(data["rules"]),
        )


class Cache:
    def __init__(self, folder: Path, salt: str, kind_words: dict[str, tuple[bytes, ...]] | None = None) -> None:
        self.folder = Path(folder) / FORMAT
        self.salt = salt.encode()
        # A file's outcome also depends on the words its kind is scanned for: a file that a changed trigger
        # set lets through (or no longer does) must not be answered from an entry made under the old set.
        self.kind_salts = {kind: b"\0".join(sorted(words)) for kind, words in (kind_words or {}).items()}

    @classmethod
    def for_run(
        cls,
        folder: Path,
        config_fingerprint: str,
        rule_ids: tuple[str, ...],
        kind_words: dict[str, tuple[bytes, ...]] | None = None,
    ) -> Cache:
        salt = "\0".join([code_fingerprint(), config_fingerprint, ",".join(rule_ids)])
        return cls(folder, salt, kind_words)

    def key(self, path: str, data: bytes, related: bytes = b"", kind: str = "") -> str:
        digest = hashlib.sha256(self.salt)
        digest.update(b"\0" + self.kind_salts.get(kind, self.kind_salts.get(ANY_KIND, b"")) + b"\0")
        digest.update(b"\0" + path.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(data)
        digest.update(b"\0" + related)
        return digest.hexdigest()

    def _entry(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key[2:]}.json"

    def get(self, key: str, need_diff: bool = True) -> Outcome | None:
        """The stored outcome; a miss when ``need_diff`` and the entry was made by a run without diffs."""
        try:
            data = json.loads(self._entry(key).read_bytes())
            if need_diff and data["diff"] is None:
                return None
            outcome = _outcome_from_json(data)
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return outcome

    def put(self, key: str, outcome: Outcome, with_diff: bool = True) -> None:
        """``with_diff=False``: the outcome was made without its diff, which the entry records as missing."""
        # Failures are not stored: they are rare, and some (stack depth) depend on where they ran.
        if outcome.status not in (CHANGED, UNCHANGED):
            return
        entry = _outcome_to_json(outcome)
        if not with_diff and outcome.status == CHANGED:
            entry["diff"] = None
        store(self._entry(key), json.dumps(entry, separators=(",", ":")).encode())

    # ----- the plan summary ----------------------------------------------------------------------
    @staticmethod
    def plan_key(select: tuple[str, ...], ignore: tuple[str, ...], from_cuda: bool = False) -> str:
        raw = json.dumps([code_fingerprint(), sorted(select), sorted(ignore), *(["cuda"] if from_cuda else [])])
        return hashlib.sha256(raw.encode()).hexdigest()[:32]

    @staticmethod
    def load_plan(folder: Path, key: str) -> PlanSummary | None:
        try:
            return PlanSummary.from_json(json.loads((Path(folder) / FORMAT / "plans" / f"{key}.json").read_bytes()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    @staticmethod
    def store_plan(folder: Path, key: str, summary: PlanSummary) -> None:
        store(Path(folder) / FORMAT / "plans" / f"{key}.json", json.dumps(summary.to_json()).encode())


def store(path: Path, data: bytes) -> None:
    """Write-then-rename so a reader never sees half an entry; a cache that cannot be written is
    silently not used (a read-only home folder must not fail the run)."""
    temp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(temp, path)
        temp = None
    except OSError:
        pass
    finally:
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp)


def _outcome_to_json(outcome: Outcome) -> dict[str, Any]:
    return {
        "status": outcome.status,
        "output": None if outcome.output is None else base64.b64encode(outcome.output).decode("ascii"),
        "findings": [f.to_dict() for f in outcome.findings],
        "diff": outcome.diff,
    }


def _outcome_from_json(data: dict[str, Any]) -> Outcome:
    status = data["status"]
    if status not in (CHANGED, UNCHANGED):
        raise ValueError(status)
    output = data["output"]
    if status == CHANGED and not isinstance(output, str):
        raise ValueError("changed entry without output")
    findings = [_finding_from_json(f) for f in data["findings"]]
    content = None if output is None else base64.b64decode(output, validate=True)
    return Outcome(status, content, findings, diff=data["diff"] or "")


def _finding_from_json(data: dict[str, Any]) -> Finding:
    return Finding(**{**data, "span": Span(**data["span"]), "risks": tuple(data["risks"])})


# A launch line names the Python it runs: `train.py`, `src/train.py`, `-m pkg.train`. A name starts where a
# run of path characters starts: tried from every position inside a long run (a notebook's base64 image is one),
# the pattern backtracked over the rest of the run each time, quadratic in its length.
_LAUNCHED = re.compile(rb"(?<![\w./-])([\w./-]+\.py)\b|-m[ \t]+([A-Za-z_][\w.]*)")


def launched_sources(real_path: str, data: bytes) -> bytes:
    """The bytes of the Python files a shell script or notebook may launch, found next to it.

    The shell rules read those files (is this a Hugging Face job? which flags does the script define
    itself?), so the result of a script depends on them too and its cache key must change with them.
    """
    folder = os.path.dirname(real_path)
    parts = []
    for match in sorted(set(_LAUNCHED.findall(data))):
        name = match[0] or match[1].replace(b".", b"/") + b".py"
        try:
            with open(os.path.join(folder, os.fsdecode(name)), "rb") as handle:
                parts.append(name + b"\0" + hashlib.sha256(handle.read()).digest())
        except (OSError, ValueError):
            continue
    return b"\0".join(parts)


def related_sources(kind: str, real_path: str, data: bytes) -> bytes:
    """What else, beside its own bytes, decides the outcome of a file of ``kind``: the Python files a
    shell script, notebook or Dockerfile launches, and for Python code that loads a file (``load(``)
    the files around it, one of which may say what that file holds (see ``migrate/neighbors.py``)."""
    related = launched_sources(real_path, data) if kind in ("shell", "notebook", "dockerfile") else b""
    if kind in ("python", "notebook") and b"load(" in data:
        related += b"\0neighbors\0" + neighbors.signature(real_path)
    return related
