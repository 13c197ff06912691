"""SARIF 2.1.0 for GitHub code scanning and other SARIF viewers.

Spec: https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/sarif-v2.1.0-errata01-os-complete.html
GitHub's subset: https://docs.github.com/en/code-security/code-scanning/integrating-with-code-scanning/sarif-support-for-code-scanning

One run. Every finding becomes a result (suppressed ones carry an ``inSource`` suppression so viewers
hide them); applied edits carry the edit as a SARIF ``fix``. Files that could not be processed are
tool execution notifications, not results: they say nothing about the user's code.
"""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

from neuron_migrate.report.model import EXCLUDED, ERROR, FAILED, SAFE, SKIPPED, WARNING, FileResult, Finding, Report
from neuron_migrate.report.render import is_web

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://github.com/neuron-migrate/neuron-migrate"
SRCROOT = "%SRCROOT%"
FINGERPRINT_KEY = "neuronMigrate/v1"
WINDOWS_ABSOLUTE = re.compile(r"^[A-Za-z]:/")

# Default level of a rule's results, by rule safety: manual items are work left to do, review
# edits are done but need a look, safe edits are done and need nothing.
DEFAULT_LEVELS = {"manual": "warning", "review": "note", "safe": "none"}


def render(report: Report, rules: dict[str, dict[str, Any]]) -> str:
    return json.dumps(to_sarif(report, rules), indent=2, ensure_ascii=False) + "\n"


def source_root(cwd: Path) -> Path:
    """The repository root: the nearest folder with a ``.git`` (a folder, or a file in a worktree or
    submodule) at or above ``cwd``; ``cwd`` itself outside a repository."""
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return cwd


def to_sarif(report: Report, rules: dict[str, dict[str, Any]], cwd: Path | None = None) -> dict[str, Any]:
    """Report paths are relative to the working directory; SARIF's are relative to the repository
    root (``%SRCROOT%``), which is what code scanning matches against the files of the commit."""
    cwd = (cwd or Path.cwd()).absolute()
    root = source_root(cwd)
    base = Base(root, cwd.relative_to(root).as_posix())
    rule_ids = list(rules)
    index = {rule_id: i for i, rule_id in enumerate(rule_ids)}
    results = [result(f, index[f.rule], base) for fr in report.files for f in fr.findings]
    run = {
        "tool": {
            "driver": {
                "name": "neuron-migrate",
                "version": report.tool_version,
                "informationUri": INFORMATION_URI,
                "rules": [descriptor(rule_id, rules[rule_id]) for rule_id in rule_ids],
            }
        },
        # One category per command, so a rewrite and an audit uploaded for one commit do not
        # replace each other's alerts.
        "automationDetails": {"id": f"neuron-migrate/{report.command}/"},
        "invocations": [invocation(report, base)],
        "originalUriBaseIds": {
            SRCROOT: {
                "uri": root.as_uri().rstrip("/") + "/",
                "description": {"text": "The repository root (the working directory outside a git repository)."},
            }
        },
        "columnKind": "unicodeCodePoints",
        "results": results,
        "properties": {"totals": report.totals()},
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def descriptor(rule_id: str, rule: dict[str, Any]) -> dict[str, Any]:
    title = rule["title"] or rule_id
    entry: dict[str, Any] = {
        "id": rule_id,
        "name": identifier(title) or rule_id,
        "shortDescription": {"text": title},
        "fullDescription": {"text": rule["summary"] or title},
        "defaultConfiguration": {"level": DEFAULT_LEVELS[rule["safety"]]},
        "properties": {"tags": [*rule["risks"], rule["safety"]], "safety": rule["safety"]},
    }
    docs = [url for url in rule["docs"] if is_web(url)]
    if docs:
        entry["helpUri"] = docs[0]
        links = "\n".join(f"- {url}" for url in docs)
        entry["help"] = {
            "text": f"{rule['summary'] or title}\n\nDocumentation:\n{links}",
            "markdown": f"{rule['summary'] or title}\n\nDocumentation:\n\n{links}",
        }
    return entry


def identifier(title: str) -> str:
    """A rule title as the PascalCase identifier SARIF wants in ``name`` ("UseOfUninitializedVariable")."""
    return "".join(word[:1].upper() + word[1:] for word in re.findall(r"[A-Za-z0-9]+", title))


class Base:
    """Where report paths start (the working directory) relative to ``%SRCROOT%`` (the repository root)."""

    def __init__(self, root: Path, prefix: str) -> None:
        self.root = root
        self.prefix = "" if prefix == "." else prefix

    def location(self, path: str) -> dict[str, str]:
        return artifact_location(path, self.prefix, self.root)


def result(f: Finding, rule_index: int, base: Base | None = None) -> dict[str, Any]:
    base = base or Base(Path.cwd(), "")
    level = result_level(f)
    data: dict[str, Any] = {"ruleId": f.rule, "ruleIndex": rule_index}
    if level == "none":
        # SARIF only allows level "none" on results whose kind is not "fail".
        data["kind"] = "informational"
    data["level"] = level
    data["message"] = {"text": message_text(f)}
    data["locations"] = [{"physicalLocation": physical_location(f, base)}]
    data["partialFingerprints"] = {FINGERPRINT_KEY: f.fingerprint}
    properties: dict[str, Any] = {
        "safety": f.safety,
        "applied": f.applied,
        "severity": f.severity,
        "risks": list(f.risks),
        "evidence": f.evidence,
    }
    if f.cell is not None:
        properties["cell"] = f.cell
        properties["cellRegion"] = region(f)
    data["properties"] = properties
    if f.applied and f.cell is None:
        data["fixes"] = [fix(f, base)]
    if f.suppressed:
        data["suppressions"] = [{"kind": "inSource"}]
    return data


def result_level(f: Finding) -> str:
    if f.severity == ERROR:
        return "error"
    if f.severity == WARNING:
        return "warning"
    if f.applied and f.safety == SAFE:
        return "none"
    return "note"


def message_text(f: Finding) -> str:
    text = f.message or f.rule
    if f.cell is not None:
        text = f"Cell {f.cell}, line {f.span.line}: {text}"
    if f.fix and not f.applied:
        text += " " if text.endswith((".", ":", "!", "?")) else ". "
        text += f"Next step: {f.fix}"
    return text


def physical_location(f: Finding, base: Base) -> dict[str, Any]:
    location: dict[str, Any] = {"artifactLocation": base.location(f.path)}
    if f.cell is None:
        location["region"] = {**region(f), "snippet": {"text": f.before}} if f.before else region(f)
    else:
        # Cell spans count lines inside the cell, not inside the .ipynb JSON; point at the file
        # and keep the cell position in the message and properties.
        location["region"] = {"startLine": 1}
    return location


def region(f: Finding) -> dict[str, int]:
    span = f.span
    return {
        "startLine": span.line,
        "startColumn": span.column,
        "endLine": span.end_line,
        "endColumn": span.end_column,
    }


def fix(f: Finding, base: Base) -> dict[str, Any]:
    return {
        "description": {"text": f.message},
        "artifactChanges": [
            {
                "artifactLocation": base.location(f.path),
                "replacements": [{"deletedRegion": region(f), "insertedContent": {"text": f.after}}],
            }
        ],
    }


def artifact_location(path: str, prefix: str = "", root: Path | None = None) -> dict[str, str]:
    """``path`` (relative to the working directory, which is ``prefix`` inside the repository root)
    as a URI relative to ``%SRCROOT%``; absolute paths and paths leading out of the repository
    become ``file:`` URIs."""
    posix = path.replace("\\", "/")
    if WINDOWS_ABSOLUTE.match(posix):
        return {"uri": "file:///" + quote(posix, safe="/:")}
    if posix.startswith("/"):
        return {"uri": "file://" + quote(posix, safe="/")}
    relative = posixpath.normpath(posixpath.join(prefix, posix))
    if relative == ".." or relative.startswith("../"):
        outside = posixpath.normpath(posixpath.join((root or Path.cwd()).as_posix(), relative))
        return artifact_location(outside)
    # Quoting also turns a ":" into %3A, so "c:d.py" cannot be mistaken for a URI scheme.
    return {"uri": quote(relative, safe="/"), "uriBaseId": SRCROOT}


def invocation(report: Report, base: Base) -> dict[str, Any]:
    failed = [fr for fr in report.files if fr.status == FAILED]
    data: dict[str, Any] = {
        "executionSuccessful": not failed,
        "exitCode": report.exit_code(),
        "properties": {
            "command": report.command,
            "mode": report.mode,
            "durationSeconds": round(report.duration_seconds, 3),
        },
    }
    # A file left out for a reason of its own (a size or time limit, read-only, not UTF-8) is worth a warning;
    # one the configuration excludes is what the user asked for.
    skipped = [fr for fr in report.files if fr.status == SKIPPED and fr.error and fr.error != EXCLUDED]
    if failed or skipped:
        data["toolExecutionNotifications"] = [failure(fr, base) for fr in failed] + [skip(fr, base) for fr in skipped]
    return data


def skip(fr: FileResult, base: Base) -> dict[str, Any]:
    return {
        "level": "warning",
        "message": {"text": f"{fr.path}: skipped: {fr.error} (file left untouched)"},
        "locations": [{"physicalLocation": {"artifactLocation": base.location(fr.path)}}],
    }


def failure(fr: FileResult, base: Base) -> dict[str, Any]:
    error = fr.error or "could not be processed; file left unchanged"
    separator = ":" if error[:1].isdigit() else ": "  # "3:9: invalid syntax" names a place in the file
    return {
        "level": "error",
        "message": {"text": f"{fr.path}{separator}{error}"},
        "locations": [{"physicalLocation": {"artifactLocation": base.location(fr.path)}}],
    }
