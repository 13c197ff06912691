"""JSON report: valid against the shipped schema, and the schema describes exactly what the model emits."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import jsonschema
import pytest
from test_report_render import CATALOG, empty_report, sample_report

from neuron_migrate.report import model
from neuron_migrate.report.json_report import schema
from neuron_migrate.report.model import FileResult, Finding, Report
from neuron_migrate.report.render import render
from neuron_migrate.rules.base import all_rules

ROOT = Path(__file__).resolve().parents[1]


def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema(), format_checker=jsonschema.FormatChecker())


def rendered(report: Report | None = None) -> dict:
    return json.loads(render(report or sample_report(), "json", rules=CATALOG))


def test_schema_is_valid_draft_2020_12():
    jsonschema.Draft202012Validator.check_schema(schema())
    assert schema()["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_the_schema_has_one_copy_and_the_docs_link_to_it():
    assert not list((ROOT / "docs").glob("*.schema.json"))
    for page in ("report.md", "guide.md"):
        assert "../neuron_migrate/report/schema.json" in (ROOT / "docs" / page).read_text(encoding="utf-8"), page


def test_schema_matches_the_model_constants():
    s = schema()
    defs = s["$defs"]
    assert s["properties"]["schema_version"]["const"] == model.SCHEMA_VERSION
    assert tuple(defs["safety"]["enum"]) == model.SAFETIES
    assert tuple(defs["severity"]["enum"]) == model.SEVERITIES
    assert tuple(defs["risk"]["enum"]) == model.RISK_TAGS
    statuses = (model.UNCHANGED, model.CHANGED, model.FAILED, model.SKIPPED)
    assert tuple(defs["file"]["properties"]["status"]["enum"]) == statuses


def test_schema_lists_every_field_the_model_writes():
    defs = schema()["$defs"]
    finding_fields = {f.name for f in dataclasses.fields(Finding)}
    assert set(defs["finding"]["properties"]) == finding_fields == set(defs["finding"]["required"])
    assert set(defs["span"]["properties"]) == {f.name for f in dataclasses.fields(model.Span)}
    assert set(defs["file"]["properties"]) == set(FileResult("x.py").to_dict())
    assert set(defs["totals"]["properties"]) == set(Report("0", "rewrite", "write").totals())
    top = set(schema()["properties"])
    assert top == set(schema()["required"])
    assert set(Report("0", "rewrite", "write").to_dict()) | {"exit_code"} == top


@pytest.mark.parametrize("make", [sample_report, empty_report])
def test_rendered_reports_validate(make):
    validator().validate(json.loads(render(make(), "json", rules=CATALOG)))


def test_schema_rejects_surprises():
    data = rendered()
    broken = copy.deepcopy(data)
    broken["files"][0]["findings"][0]["colour"] = "red"
    assert not validator().is_valid(broken)
    broken = copy.deepcopy(data)
    broken["files"][0]["findings"][0]["safety"] = "probably-fine"
    assert not validator().is_valid(broken)
    broken = copy.deepcopy(data)
    broken["schema_version"] = "0.9"
    assert not validator().is_valid(broken)
    broken = copy.deepcopy(data)
    broken["rules"]["NM110"]["example"] = {"before": "", "after": ""}
    assert not validator().is_valid(broken)


def test_content():
    data = rendered()
    assert data["tool"] == {"name": "neuron-migrate", "version": "0.1.0"}
    assert (data["command"], data["mode"], data["duration_seconds"]) == ("rewrite", "check", 1.235)
    assert data["exit_code"] == 2  # a file failed
    assert data["totals"] == {
        "files": 6, "changed": 2, "failed": 1, "skipped": 1, "edits": 3, "safe": 2, "review": 1, "with_todo": 0, "manual": 2,
        "suppressed": 1,
    }
    # Only rules that ran or fired, cleaned to the documented keys, risks in checklist order.
    assert sorted(data["rules"]) == ["NM100", "NM110", "NM130"]
    assert data["rules"]["NM130"] == {
        "title": "xm.all_reduce -> torch.distributed.all_reduce",
        "safety": "review",
        "summary": "Collectives go through the neuron process group.",
        "docs": ["https://docs.pytorch.org/docs/stable/distributed.html"],
        "risks": ["numerics", "collectives"],
    }
    files = {f["path"]: f for f in data["files"]}
    assert files["broken.py"]["status"] == "failed"
    assert files["broken.py"]["error"] == "3:9: invalid syntax"
    cell = files["notebooks/explore.ipynb"]["findings"][0]
    assert (cell["cell"], cell["span"]["line"], cell["rule"]) == (3, 2, "NM100")
    train = files["train.py"]["findings"]
    assert [f["suppressed"] for f in train] == [False, False, False, True]
    assert train[0]["span"] == {"line": 5, "column": 5, "end_line": 5, "end_column": 41}
    assert train[0]["after"] == "dist.all_reduce(loss, op=dist.ReduceOp.SUM)"


def test_checklist_points_at_findings_in_the_report():
    data = rendered()
    by_fingerprint = {f["fingerprint"]: f for fr in data["files"] for f in fr["findings"]}
    assert list(data["checklist"]) == ["collectives", "numerics", "performance"]  # sorted keys
    for tag, fingerprints in data["checklist"].items():
        for fp in fingerprints:
            finding = by_fingerprint[fp]
            assert tag in finding["risks"]
            assert finding["safety"] != "safe" and not finding["suppressed"]
    assert by_fingerprint[data["checklist"]["collectives"][0]]["rule"] == "NM130"


def test_output_is_stable_text():
    text = render(sample_report(), "json", rules=CATALOG)
    assert text.endswith("}\n")
    assert text.startswith('{\n  "checklist": {')  # two-space indent, sorted keys
    report = sample_report()
    report.files[0].findings[0].message = "räumt auf — ok"
    assert "räumt auf — ok" in render(report, "json")


def test_engine_findings_render_to_valid_json(migrate):
    source = (
        "import torch_xla.core.xla_model as xm\n\n"
        "def step(batch):\n"
        "    xm.mark_step()\n"
        "    return xm.xla_device_kind()\n"
    )
    result = migrate(source, "pkg/train.py")
    assert result.findings, "the engine should report the mark_step edit and the leftover"
    report = Report("0.1.0", "rewrite", "diff", files=[FileResult("pkg/train.py", model.CHANGED, result.findings)])
    # RuleMeta keeps docs as a tuple and risks as a frozenset; the renderer turns them into lists.
    metas = {cls.meta.id: dataclasses.asdict(cls.meta) for cls in all_rules()}
    data = json.loads(render(report, "json", rules=metas))
    validator().validate(data)
    assert {f["rule"] for f in data["files"][0]["findings"]} >= {"NM110", "NM100"}
    assert data["rules"]["NM110"]["title"] == metas["NM110"]["title"]
