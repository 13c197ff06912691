"""The fixture cases of every file kind, how each kind is rewritten and checked, and the findings snapshot.

One case is ``fixtures/<kind>/<ID>/<case>.before.<ext>`` with ``<case>.after.<ext>`` (the output of
every rule on) and ``<case>.findings``, or ``<case>.noop.<ext>`` (must come out byte-identical) with
``<case>.noop.findings``. A ``.findings`` file holds one line per finding of the all-rules run, in
the report's order: ``RULE line:col safety message`` (``RULE cell N:line:col ...`` in a notebook,
``[suppressed]`` after the safety of a finding an ignore comment silenced).

``tests/test_rule_fixtures.py`` runs the cases; ``tests/update_snapshots.py`` writes the
``.findings`` files.
"""

from __future__ import annotations

import ast
import configparser
import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BASH = shutil.which("bash")
BEFORE, AFTER, NOOP = "before", "after", "noop"


# ----- how each kind is read -----------------------------------------------------------------------------


def _python_parses(output: bytes, before: bytes, findings) -> None:
    ast.parse(output)


def _bash_accepts(text: bytes) -> bool:
    """``bash -n``: the script is syntactically valid (True when there is no bash to ask)."""
    if BASH is None:
        return True
    return subprocess.run([BASH, "-n"], check=False, input=text, capture_output=True).returncode == 0


def _shell_parses(output: bytes, before: bytes, findings) -> None:
    # Some fixtures hold bash that bash itself refuses on purpose; only a script that was valid must stay so.
    if _bash_accepts(before):
        assert _bash_accepts(output), "the rewritten script does not pass `bash -n`"


def _without_sources(data: bytes):
    """The notebook's JSON with every cell source blanked: what a rewrite must not change."""
    nb = json.loads(data.decode("utf-8-sig"))
    for cell in nb["cells"]:
        cell["source"] = None
    return nb


def _notebook_parses(output: bytes, before: bytes, findings) -> None:
    from neuron_migrate.migrate.notebook import python_cells

    assert _without_sources(output) == _without_sources(before), "a rewrite changed more than cell sources"
    # NM550 names the cells it could not parse; those are kept as they were.
    unparsed = {f.cell for f in findings if f.rule == "NM550"}
    for number, text in python_cells(output):
        if number not in unparsed:
            ast.parse(text)


def _requirements_parse(output: bytes, before: bytes, findings, ext: str) -> None:
    text = output.decode("utf-8")
    if ext == "toml":
        import tomlkit

        tomlkit.parse(text)
    elif ext == "cfg":
        configparser.ConfigParser(interpolation=None).read_string(text)
    elif ext == "yml":
        import yaml

        yaml.safe_load(text)


@dataclass(frozen=True)
class Kind:
    folder: str  # under fixtures/
    rule_kind: str  # RuleMeta.kind of the rules whose fixtures these are
    adapters: dict[str, str]  # file extension -> file kind of the adapter (migrate.sources.ADAPTERS)
    parses: Callable[..., None]  # raises when an output is not valid for its kind
    # Rewritten under its full path, so that a launched script next to the fixture is read as in a project.
    full_path: bool = False
    # The output with --no-comments is the expected output without its marker lines (markers own whole lines).
    whole_line_markers: bool = False
    nested: bool = True  # cases sit in <ID>/ folders; False: also straight under the kind's folder

    def adapter_kind(self, path: Path) -> str:
        return self.adapters[path.name.rsplit(".", 1)[1]]

    def check_parses(self, path: Path, output: bytes, before: bytes, findings) -> None:
        if self.parses is _requirements_parse:
            _requirements_parse(output, before, findings, path.name.rsplit(".", 1)[1])
        else:
            self.parses(output, before, findings)


KINDS = (
    Kind("rules", "python", {"py": "python"}, _python_parses),
    Kind("shell", "shell", {"sh": "shell"}, _shell_parses, full_path=True),
    Kind("notebook", "notebook", {"ipynb": "notebook"}, _notebook_parses, nested=False),
    Kind(
        "requirements",
        "requirements",
        {"txt": "requirements", "toml": "pyproject", "cfg": "setup_cfg", "yml": "conda_env"},
        _requirements_parse,
        whole_line_markers=True,
    ),
    Kind("dockerfile", "dockerfile", {"Dockerfile": "dockerfile"}, lambda *_: None, full_path=True),
)


# ----- the cases ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    kind: Kind
    source: Path  # the .before. or .noop. file
    role: str  # BEFORE or NOOP

    @property
    def name(self) -> str:
        return self.source.name.split(".", 1)[0]

    @property
    def keeps_dual_stack(self) -> bool:
        """A case named ``keep_dual_stack*`` is rewritten with --keep-dual-stack."""
        return self.name.startswith("keep_dual_stack")

    @property
    def from_cuda(self) -> bool:
        """A case of a CUDA rule (source "cuda") is rewritten with --from cuda."""
        from neuron_migrate.ruleapi import get_rule

        rule = get_rule(self.rule) if self.rule else None
        return rule is not None and rule.source == "cuda"

    def plan(self, *rules: str):
        """The plan this case runs under: ``rules`` (every rule when none), its switches."""
        return plan_for(*rules, keep=self.keeps_dual_stack, cuda=self.from_cuda)

    @property
    def ext(self) -> str:
        return self.source.name.rsplit(".", 1)[1]

    @property
    def rule(self) -> str | None:
        """The rule the folder names; None for cases straight under the kind's folder (a kind-wide case)."""
        parent = self.source.parent.name
        return parent if parent.startswith("NM") else None

    @property
    def expected(self) -> Path:
        return self.source if self.role == NOOP else self.source.with_name(f"{self.name}.{AFTER}.{self.ext}")

    @property
    def findings_file(self) -> Path:
        suffix = ".noop.findings" if self.role == NOOP else ".findings"
        return self.source.with_name(self.name + suffix)

    @property
    def path(self) -> str:
        """The path the case is rewritten under."""
        return str(self.source) if self.kind.full_path else self.source.name

    @property
    def id(self) -> str:
        where = self.source.parent.name
        return f"{self.kind.folder}/{where}/{self.source.name.rsplit('.', 1)[0]}"


def cases(role: str) -> list[Case]:
    found = []
    for kind in KINDS:
        root = FIXTURES / kind.folder
        pattern = f"*.{role}.*"
        paths = [*root.glob(f"*/{pattern}"), *(() if kind.nested else root.glob(pattern))]
        found += [Case(kind, p, role) for p in sorted(paths) if p.name.rsplit(".", 1)[1] in kind.adapters]
    return found


def all_cases() -> list[Case]:
    return cases(BEFORE) + cases(NOOP)


# ----- running a case ----------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def plan_for(*rules: str, keep: bool = False, cuda: bool = False):
    """Only these rules; every rule when none is named. ``keep``: with --keep-dual-stack; ``cuda``: --from cuda."""
    from neuron_migrate.migrate.engine import RulePlan

    return RulePlan.build(select=list(rules), keep_dual_stack=keep, from_cuda=cuda)


def rewrite(case: Case, data: bytes, plan, no_comments: bool = False):
    """The adapter's Outcome for ``data`` as the file of ``case``."""
    from neuron_migrate.migrate.sources import ADAPTERS

    return ADAPTERS[case.kind.adapter_kind(case.source)](data, case.path, plan, no_comments)


def output_of(outcome, data: bytes) -> bytes:
    return data if outcome.output is None else outcome.output


# ----- the findings snapshot ----------------------------------------------------------------------------


def finding_line(finding) -> str:
    where = f"{finding.span.line}:{finding.span.column}"
    if finding.cell is not None:
        where = f"cell {finding.cell}:{where}"
    safety = f"{finding.safety} [suppressed]" if finding.suppressed else finding.safety
    # A message is one line in every report; a stray newline would split the snapshot line.
    message = " ".join(finding.message.split())
    return f"{finding.rule} {where} {safety} {message}"


def report_order(findings) -> list:
    """The order the terminal report lists a file's findings in (stable: ties keep the engine's order)."""
    return sorted(findings, key=lambda f: (f.cell or 0, f.span.line, f.span.column, f.rule))


def findings_text(findings) -> str:
    return "".join(finding_line(f) + "\n" for f in report_order(findings))


def snapshot(case: Case) -> str:
    """What ``case.findings_file`` must hold: the findings of the all-rules run."""
    data = case.source.read_bytes()
    return findings_text(rewrite(case, data, case.plan()).findings)


def rule_lines(text: str, rule: str) -> list[str]:
    return [line for line in text.splitlines() if line.split(" ", 1)[0] == rule]


def findings_files() -> list[Path]:
    """Every committed findings snapshot of every kind."""
    return sorted(p for kind in KINDS for p in (FIXTURES / kind.folder).rglob("*.findings"))
