"""The rule catalog: rule metadata as plain data, as text for the terminal and as Markdown for docs/rules.md.

Everything here is derived from :class:`~neuron_migrate.rules.base.RuleMeta`, so ``neuron-migrate rules``,
the committed rule reference and the reports can never disagree with the rules themselves.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from neuron_migrate.report.model import RISK_TAGS
from neuron_migrate.ruleapi import Example, Rule, all_rules, get_rule, ordered_risks, rule_dict
from neuron_migrate.ruleapi.ids import close_ids, known_ids, unknown_selectors  # noqa: F401 - the cli reads them here

REGENERATE = "neuron-migrate rules --format markdown > docs/rules.md"

# Rule id hundreds -> what that family migrates (the numbering scheme of the design doc).
FAMILIES = {
    "NM1": "PyTorch/XLA (`torch_xla`)",
    "NM2": "optimum-neuron training",
    "NM3": "optimum-neuron inference and diffusers",
    "NM4": "torch-neuronx and neuronx-distributed",
    "NM5": "environment variables, launch scripts, requirements, Dockerfiles, notebooks and SageMaker jobs",
    "NM6": "CUDA code (`rewrite --from cuda`): devices, precision, process group",
}

# RuleMeta.kind -> the language of its example's code fences ("text" for the others)
FENCE_LANGUAGES = {
    "python": "python",
    "shell": "bash",
    "notebook": "json",
    "pyproject": "toml",
    "conda_env": "yaml",
    "dockerfile": "dockerfile",
}

SAFETY_MEANING = {
    "safe": "applied; the behaviour is the same",
    "review": "applied, with a `# neuron-migrate(NMxxx): ...` marker naming what a human must check",
    "manual": "not rewritten; a `# TODO(neuron-migrate NMxxx): ...` marker gives the next step",
}


def catalog() -> dict[str, dict[str, Any]]:
    """Rule id -> its metadata, for reports and ``neuron-migrate rules --format json``."""
    return {rule.meta.id: rule_dict(rule) for rule in all_rules()}


def find_rule(rule_id: str) -> type[Rule] | None:
    return get_rule(rule_id.strip())


# A rule's kind of file -> the file name its example is shown (and tested) as.
EXAMPLE_FILES = {
    "python": "example.py",
    "notebook": "example.ipynb",
    "shell": "run.sh",
    "requirements": "requirements.txt",
    "pyproject": "pyproject.toml",
    "setup_cfg": "setup.cfg",
    "conda_env": "environment.yml",
    "dockerfile": "Dockerfile",
}


def example_diff(example: Example, kind: str = "python") -> str:
    """The example as a unified diff, the way ``rewrite --diff`` would show it."""
    name = EXAMPLE_FILES.get(kind, "example.py")
    lines = difflib.unified_diff(
        example.before.splitlines(keepends=True),
        example.after.splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def risks_text(risks, none: str = "-") -> str:
    return ", ".join(ordered_risks(risks)) or none


def table_rows() -> list[tuple[str, str, str, str]]:
    """Rewrite rules (their safety), then the audit's ids (``audit`` and their severity)."""
    from neuron_migrate.analyzers.hazards import HAZARDS

    rows = [(r.meta.id, r.meta.safety, r.meta.title, risks_text(r.meta.risks)) for r in all_rules()]
    return rows + [(h.id, f"audit {h.severity}", h.title, "") for h in HAZARDS.values()]


def table_text() -> str:
    """All rules as aligned plain columns: id, safety, title, risks."""
    rows = [("ID", "SAFETY", "TITLE", "RISKS"), *table_rows()]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = []
    for row in rows:
        cells = [row[i].ljust(widths[i]) for i in range(3)]
        lines.append("  ".join([*cells, row[3]]).rstrip())
    return "\n".join(lines) + "\n"


def rule_text(rule: type[Rule]) -> str:
    """One rule explained: what it is, how safe it is, why, where it is documented and what it does."""
    meta = rule.meta
    lines = [
        f"{meta.id}: {meta.title}",
        "",
        f"safety: {meta.safety} ({SAFETY_MEANING[meta.safety]})",
        f"risks:  {risks_text(meta.risks, 'none')}",
    ]
    if meta.summary:
        lines += ["", meta.summary]
    if meta.docs:
        lines += ["", "docs:"]
        lines += [f"  {url}" for url in meta.docs]
    if rule.rows:
        lines += ["", "table (each name, then what becomes of it):"]
        for (answer, docs), names in row_groups(rule).items():
            lines += [f"  {name}" for name in names]
            lines.append(f"    -> {answer}" + (f" (docs: {docs})" if docs else ""))
    if meta.example is not None:
        if meta.example.before == meta.example.after:
            lines += ["", "example (left as it is; the finding goes to the report):", ""]
            lines.append(meta.example.before.rstrip("\n"))
        else:
            lines += ["", "example:", ""]
            lines.append(example_diff(meta.example, meta.kind).rstrip("\n"))
    return "\n".join(lines) + "\n"


def row_groups(rule: type[Rule]) -> dict[tuple[str, str], list[str]]:
    """The rule's rows as (answer, docs) -> names, in table order: many names share one answer."""
    groups: dict[tuple[str, str], list[str]] = {}
    for row in rule.rows:
        groups.setdefault((row.action.describe(), row.docs), []).append(row.name)
    return groups


def _fence(code: str, language: str) -> str:
    # A fence longer than any backtick run in the code keeps the block intact whatever it contains.
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    body = code if code.endswith("\n") else code + "\n"
    return f"{fence}{language}\n{body}{fence}"


def _family(rule_id: str) -> str:
    return FAMILIES.get(rule_id[:3], "other rules")


def _anchor(rule_id: str, title: str) -> str:
    # GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens.
    text = f"{rule_id} {title}".lower()
    kept = "".join(c for c in text if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def markdown() -> str:
    """The rule reference committed as docs/rules.md (deterministic: no dates, no versions)."""
    rules = all_rules()
    out = [
        "# Rule reference",
        "",
        f"<!-- Generated from the rule metadata by `{REGENERATE}`; do not edit by hand. -->",
        "",
        "Every rule `neuron-migrate rewrite` applies, with the example its tests run. Select or ignore rules",
        "by id or prefix (`--select NM1,NM130`, `--ignore NM100`), or silence one line with",
        "`# neuron-migrate: ignore[NM110]`.",
        "",
        "Safety:",
        "",
    ]
    out += [f"- `{safety}`: {meaning}." for safety, meaning in SAFETY_MEANING.items()]
    out += [
        "",
        "Risk tags group the review and manual items into the reviewer checklist of the report:",
        ", ".join(f"`{tag}`" for tag in RISK_TAGS) + ".",
        "",
        "| ID | title | safety | risks |",
        "|---|---|---|---|",
    ]
    for rule in rules:
        meta = rule.meta
        title = meta.title.replace("|", "\\|")
        out.append(f"| [{meta.id}](#{_anchor(meta.id, meta.title)}) | {title} | {meta.safety} | {risks_text(meta.risks)} |")
    family = None
    for rule in rules:
        if _family(rule.meta.id) != family:
            family = _family(rule.meta.id)
            out += ["", f"## {family}"]
        out += ["", rule_markdown(rule, level=3)]
    out += ["", hazards_markdown()]
    return "\n".join(out) + "\n"


def hazards_markdown() -> str:
    """The audit's hazard ids, appended to the reference."""
    from neuron_migrate.analyzers.hazards import HAZARDS

    out = [
        "## Audit findings (`neuron-migrate audit`)",
        "",
        "Hazards on the native backend, reported by the audit and never rewritten. NA1xx-NA4xx come from",
        "reading the code; NA5xx only from a run (`audit --run`). See [audit.md](audit.md).",
        "",
        "| ID | title | severity | what happens | fix |",
        "|---|---|---|---|---|",
    ]
    for hazard in HAZARDS.values():
        cells = [hazard.id, hazard.title, hazard.severity, hazard.why, hazard.fix]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out)


def hazard_text(hazard_id: str) -> str | None:
    """``neuron-migrate rules NA201``: one audit id explained; None for an unknown id."""
    from neuron_migrate.analyzers.hazards import HAZARDS

    hazard = HAZARDS.get(hazard_id.strip().upper())
    if hazard is None:
        return None
    lines = [f"{hazard.id}: {hazard.title}", "", f"severity: {hazard.severity} (audit finding; never rewritten)", ""]
    lines += [f"what happens: {hazard.why}", f"fix: {hazard.fix}"]
    if hazard.docs:
        lines += ["", "docs:", *(f"  {url}" for url in hazard.docs)]
    return "\n".join(lines) + "\n"


def rule_markdown(rule: type[Rule], level: int = 2) -> str:
    """One rule's section of the reference (no trailing newline)."""
    meta = rule.meta
    out = [
        f"{'#' * level} {meta.id} {meta.title}",
        "",
        f"**Safety:** {meta.safety}. **Risks:** {risks_text(meta.risks, 'none')}.",
    ]
    if meta.summary:
        out += ["", meta.summary]
    if meta.docs:
        out += ["", "Documentation: " + ", ".join(f"<{url}>" for url in meta.docs)]
    if rule.rows:
        out += ["", f"<details><summary>Names answered by its table ({len(rule.rows)})</summary>", ""]
        for (answer, docs), names in row_groups(rule).items():
            link = f" ([docs]({docs}))" if docs else ""
            out.append(f"- {', '.join(f'`{name}`' for name in names)}: {answer.replace('|', chr(92) + '|')}{link}")
        out += ["", "</details>"]
    example = meta.example
    language = FENCE_LANGUAGES.get(meta.kind, "text")
    if example is not None and example.before == example.after:
        out += ["", "Example (left as it is; the finding goes to the report):", "", _fence(example.before, language)]
    elif example is not None:
        out += ["", "Before:", "", _fence(example.before, language), "", "After:", "", _fence(example.after, language)]
    return "\n".join(out)
