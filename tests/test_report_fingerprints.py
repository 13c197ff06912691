"""Fingerprints: one per finding, also when the same code repeats in a file, and unchanged when code moves."""

from __future__ import annotations

from pathlib import Path

import pytest

from neuron_migrate.analyzers.hazards import audit_fingerprint
from neuron_migrate.analyzers.static import scan_source
from neuron_migrate.audit import STATIC_AND_RUNTIME, merge_runtime
from neuron_migrate.config import load_config
from neuron_migrate.migrate.runner import run
from neuron_migrate.report.model import MANUAL, FileResult, Finding, Report, Span, fingerprint, number_findings

LEGACY = """\
import torch_xla.core.xla_model as xm

for batch in loader:
    loss = step(batch)
    xm.mark_step()
    evaluate()
    xm.mark_step()
"""

HOST_SYNCS = """\
import torch

def step(model, x):
    y = model(x)
    if y.sum().item() > 0:
        y = y * 2
    print(y.sum().item())
    z = y.sum().item()
    w = y.sum().item()
    return z + w
"""


def rewrite_fingerprints(tmp_path: Path, source: str) -> list[tuple[str, int, str]]:
    target = tmp_path / "train.py"
    target.write_text(source, encoding="utf-8")
    report = run([target], load_config([tmp_path], jobs=1, cache=False), mode="check")
    report.complete()
    return [(f.rule, f.span.line, f.fingerprint) for f in report.findings]


def audit_findings(source: str) -> list[Finding]:
    findings = scan_source(source, "step.py")
    number_findings(findings)
    return findings


def test_the_same_code_twice_in_a_file_gets_two_fingerprints(tmp_path):
    found = [(line, fp) for rule, line, fp in rewrite_fingerprints(tmp_path, LEGACY) if rule == "NM110"]
    assert [line for line, _ in found] == [5, 7]
    assert found[0][1] != found[1][1]


def test_the_first_copy_keeps_the_fingerprint_it_always_had():
    first = fingerprint("NM110", "train.py", "xm.mark_step()")
    assert fingerprint("NM110", "train.py", "xm.mark_step()", occurrence=0) == first
    assert fingerprint("NM110", "train.py", "xm.mark_step()", occurrence=1) != first


def test_a_line_inserted_above_changes_no_fingerprint(tmp_path):
    before = {fp for _, _, fp in rewrite_fingerprints(tmp_path, LEGACY)}
    moved = LEGACY.replace("for batch", "import os\n\nprint(os.getcwd())\nfor batch")
    after = rewrite_fingerprints(tmp_path, moved)
    assert {fp for _, _, fp in after} == before
    assert {line for rule, line, _ in after if rule == "NM110"} == {8, 10}


def test_audit_findings_count_copies_of_a_line_and_keep_them_when_code_moves():
    findings = audit_findings(HOST_SYNCS)
    items = [f for f in findings if f.rule == "NA201"]
    assert len(items) >= 3
    assert len({f.fingerprint for f in findings}) == len(findings)
    moved = audit_findings(HOST_SYNCS.replace("import torch\n", "import torch\nimport os\n\n"))
    assert sorted(f.fingerprint for f in moved) == sorted(f.fingerprint for f in findings)


def test_numbering_is_idempotent_and_ignores_file_order():
    findings = audit_findings(HOST_SYNCS)
    first = [f.fingerprint for f in findings]
    number_findings(list(reversed(findings)))
    assert [f.fingerprint for f in findings] == first


def test_suppressing_a_copy_does_not_renumber_the_others():
    findings = audit_findings(HOST_SYNCS)
    first = [f.fingerprint for f in findings]
    findings[0].suppressed = True
    number_findings(findings)
    assert [f.fingerprint for f in findings] == first


def runtime_twin(static: Finding) -> Finding:
    """What the runtime analyzer reports about the line a static finding points at."""
    return Finding(
        rule=static.rule, message="seen 3 times", path=static.path, span=static.span, safety=MANUAL,
        applied=False, before=static.before, evidence="runtime",
        fingerprint=audit_fingerprint(static.rule, static.path, static.before),
    )


def test_a_run_confirms_the_static_finding_of_its_own_line():
    findings = audit_findings(HOST_SYNCS)
    copies = [f for f in findings if f.rule == "NA201" and f.before == "z = y.sum().item()"]
    assert copies
    second = [f for f in findings if f.rule == "NA201" and f.before == "w = y.sum().item()"]
    report = Report("0", "audit", "static", files=[FileResult("step.py", findings=findings)])
    fingerprints = {id(f): f.fingerprint for f in findings}
    merge_runtime(report, [runtime_twin(second[0])])
    assert second[0].evidence == STATIC_AND_RUNTIME
    assert copies[0].evidence == "static"
    assert len(report.findings) == len(findings), "the runtime finding merged into its twin"
    assert all(f.fingerprint == fingerprints[id(f)] for f in report.findings)


def test_a_run_tells_identical_lines_apart():
    source = "import torch\n\ndef step(model, x):\n    y = model(x)\n    a = y.sum().item()\n    a = y.sum().item()\n    return a\n"
    findings = audit_findings(source)
    first, second = [f for f in findings if f.rule == "NA201"]
    report = Report("0", "audit", "static", files=[FileResult("step.py", findings=findings)])
    merge_runtime(report, [runtime_twin(second)])
    assert (first.evidence, second.evidence) == ("static", STATIC_AND_RUNTIME)
    assert first.fingerprint != second.fingerprint


def test_runtime_only_findings_get_their_own_fingerprint():
    report = Report("0", "audit", "static", files=[FileResult("step.py")])
    span = Span(4, 5, 4, 20)
    seen = [
        Finding("NA501", "recompiled", "step.py", span, MANUAL, False, before="y = f(x)", evidence="runtime"),
        Finding("NA501", "recompiled", "step.py", Span(9, 5, 9, 20), MANUAL, False, before="y = f(x)",
                evidence="runtime"),
    ]
    merge_runtime(report, seen)
    assert len({f.fingerprint for f in report.findings}) == 2


@pytest.mark.parametrize("cell", [None, 2])
def test_fingerprints_name_the_notebook_cell(cell):
    finding = Finding("NA201", "m", "nb.ipynb", Span(1, 1, 1, 5), MANUAL, False, before="x.item()", cell=cell)
    number_findings([finding])
    assert finding.fingerprint == fingerprint("NA201", "nb.ipynb", "x.item()", cell)
