"""SARIF 2.1.0: valid against the official OASIS schema, with locations, fingerprints and fixes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
from test_report_render import CATALOG, EVIL_PATH, empty_report, sample_report

from neuron_migrate.report.model import CHANGED, ERROR, SAFE, SKIPPED, FileResult, Finding, Report, Span
from neuron_migrate.report.render import render
from neuron_migrate.report.sarif import artifact_location, identifier

SARIF_SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0.json").read_text(encoding="utf-8"))


def sarif(report: Report | None = None) -> dict:
    return json.loads(render(report or sample_report(), "sarif", rules=CATALOG))


def results_by_rule(run: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for result in run["results"]:
        out.setdefault(result["ruleId"], []).append(result)
    return out


@pytest.mark.parametrize("make", [sample_report, empty_report])
def test_valid_against_the_official_schema(make):
    log = json.loads(render(make(), "sarif", rules=CATALOG))
    jsonschema.Draft4Validator(SARIF_SCHEMA, format_checker=jsonschema.FormatChecker()).validate(log)
    assert log["version"] == "2.1.0"
    assert len(log["runs"]) == 1


def test_the_test_schema_is_the_oasis_one():
    assert SARIF_SCHEMA["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    assert SARIF_SCHEMA["id"].startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")


def test_driver_and_rules():
    run = sarif()["runs"][0]
    driver = run["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("neuron-migrate", "0.1.0")
    assert driver["informationUri"].startswith("https://")
    assert [r["id"] for r in driver["rules"]] == ["NM100", "NM110", "NM130"]
    nm130 = driver["rules"][2]
    assert nm130["name"] == "XmAllReduceTorchDistributedAllReduce"
    assert nm130["shortDescription"] == {"text": "xm.all_reduce -> torch.distributed.all_reduce"}
    assert nm130["fullDescription"] == {"text": "Collectives go through the neuron process group."}
    assert nm130["helpUri"] == "https://docs.pytorch.org/docs/stable/distributed.html"
    assert nm130["properties"]["tags"] == ["numerics", "collectives", "review"]
    assert nm130["defaultConfiguration"] == {"level": "note"}
    assert driver["rules"][0]["defaultConfiguration"] == {"level": "warning"}
    # A javascript: documentation URL is never offered as the rule's help link.
    assert "helpUri" not in driver["rules"][0]
    for result in run["results"]:
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]


def test_levels_follow_safety():
    by_rule = results_by_rule(sarif()["runs"][0])
    review = by_rule["NM130"][0]
    assert review["level"] == "note" and "kind" not in review
    safe = [r for r in by_rule["NM110"] if "suppressions" not in r]
    assert {(r["level"], r["kind"]) for r in safe} == {("none", "informational")}
    assert {r["level"] for r in by_rule["NM100"]} == {"warning"}


def test_severity_error_overrides_the_level():
    report = sample_report()
    report.files[0].findings[2].severity = ERROR
    assert results_by_rule(sarif(report)["runs"][0])["NM100"][0]["level"] == "error"


def test_result_location_fingerprint_and_properties():
    run = sarif()["runs"][0]
    manual = next(r for r in run["results"] if r["ruleId"] == "NM100" and "cell" not in r["properties"])
    location = manual["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "train.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {
        "startLine": 7, "startColumn": 12, "endLine": 7, "endColumn": 30, "snippet": {"text": "xm.xla_device_kind()"},
    }
    report = sample_report()
    assert manual["partialFingerprints"] == {"neuronMigrate/v1": report.files[0].findings[2].fingerprint}
    assert manual["properties"]["safety"] == "manual"
    assert manual["properties"]["risks"] == ["performance"]
    # The next step is part of the message, since code scanning shows only the message.
    assert manual["message"]["text"] == (
        "`torch_xla.core.xla_model.xla_device_kind` has no TorchNeuron equivalent. "
        "Next step: Use `torch.neuron.get_device_name()` if a x < y check needs it."
    )
    assert "fixes" not in manual


def test_applied_edits_carry_a_fix():
    by_rule = results_by_rule(sarif()["runs"][0])
    review = by_rule["NM130"][0]
    (fix,) = review["fixes"]
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"] == {"uri": "train.py", "uriBaseId": "%SRCROOT%"}
    assert change["replacements"] == [
        {
            "deletedRegion": {"startLine": 5, "startColumn": 5, "endLine": 5, "endColumn": 41},
            "insertedContent": {"text": "dist.all_reduce(loss, op=dist.ReduceOp.SUM)"},
        }
    ]
    deleted = next(r for r in by_rule["NM110"] if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "train.py" and "fixes" in r)
    assert deleted["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"] == {"text": ""}


def test_suppressed_findings_are_kept_as_in_source_suppressions():
    run = sarif()["runs"][0]
    suppressed = [r for r in run["results"] if "suppressions" in r]
    assert len(suppressed) == 1
    assert suppressed[0]["suppressions"] == [{"kind": "inSource"}]
    assert suppressed[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 9
    # Every finding is a result, suppressed or not.
    assert len(run["results"]) == len(sample_report().findings)


def test_notebook_cell_finding():
    run = sarif()["runs"][0]
    (cell,) = [r for r in run["results"] if "cell" in r["properties"]]
    assert cell["properties"]["cell"] == 3
    assert cell["properties"]["cellRegion"] == {"startLine": 2, "startColumn": 1, "endLine": 2, "endColumn": 26}
    location = cell["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "notebooks/explore.ipynb"
    # Lines inside a cell are not lines of the .ipynb file: point at the file, name the cell in the message.
    assert location["region"] == {"startLine": 1}
    assert cell["message"]["text"].startswith("Cell 3, line 2: ")


def test_notebook_edits_have_no_fix():
    report = sample_report()
    edit = Finding("NM110", "removed", "nb.ipynb", Span(1, 1, 1, 15), SAFE, applied=True, before="xm.mark_step()", cell=2)
    report.files.append(FileResult("nb.ipynb", CHANGED, [edit]))
    result = sarif(report)["runs"][0]["results"][-1]
    assert result["properties"]["cell"] == 2
    assert "fixes" not in result


def test_failed_files_are_tool_notifications_not_results():
    run = sarif()["runs"][0]
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False
    assert invocation["exitCode"] == 2
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error"
    assert note["message"]["text"].startswith("broken.py:3:9: invalid syntax")
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "broken.py"
    assert all(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] != "broken.py" for r in run["results"])


def test_clean_run():
    run = sarif(empty_report())["runs"][0]
    assert run["results"] == []
    assert run["invocations"][0]["executionSuccessful"] is True
    assert "toolExecutionNotifications" not in run["invocations"][0]


def test_uris_are_escaped_and_relative_to_srcroot():
    assert artifact_location("my dir/a b.py") == {"uri": "my%20dir/a%20b.py", "uriBaseId": "%SRCROOT%"}
    assert artifact_location("pkg\\win.py") == {"uri": "pkg/win.py", "uriBaseId": "%SRCROOT%"}
    assert artifact_location("c:d.py")["uri"] == "c%3Ad.py"
    assert artifact_location("/abs/x.py") == {"uri": "file:///abs/x.py"}
    assert artifact_location("C:\\work\\x.py") == {"uri": "file:///C:/work/x.py"}
    evil = sarif()["runs"][0]["results"]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in evil}
    assert "src/%3Cscript%3Ealert%28%27p%27%29%3C/script%3E%7Cx%60y.py" in uris
    assert EVIL_PATH not in uris


def test_identifier():
    assert identifier("xm.mark_step() / torch_xla.sync() removed") == "XmMarkStepTorchXlaSyncRemoved"
    assert identifier("") == ""


# RFC 3986 characters; the schema's "uri" formats are not checked by jsonschema without extra packages.
URI_CHARS = re.compile(r"^(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$")


def uri_values(node, key=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from uri_values(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from uri_values(v, key)
    elif key in ("uri", "helpUri", "informationUri", "$schema"):
        yield node


def test_every_uri_is_well_formed():
    values = list(uri_values(sarif()))
    assert len(values) > 10
    for value in values:
        assert URI_CHARS.match(value), value


def uris(log: dict) -> list[str]:
    run = log["runs"][0]
    found = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in run["results"]]
    for note in run["invocations"][0].get("toolExecutionNotifications", []):
        found.append(note["locations"][0]["physicalLocation"]["artifactLocation"])
    return [f["uri"] for f in found]


def test_uris_are_relative_to_the_repository_root_from_a_subfolder(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    sub = tmp_path / "sub" / "dir"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    log = sarif()
    jsonschema.Draft7Validator(SARIF_SCHEMA).validate(log)
    assert "sub/dir/train.py" in uris(log) and "sub/dir/broken.py" in uris(log)
    assert log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"
    change = next(r for r in log["runs"][0]["results"] if "fixes" in r)["fixes"][0]["artifactChanges"][0]
    assert change["artifactLocation"]["uri"].startswith("sub/dir/")


def test_a_git_file_marks_a_worktree_root(tmp_path, monkeypatch):
    (tmp_path / ".git").write_text("gitdir: elsewhere\n", encoding="utf-8")
    (tmp_path / "pkg").mkdir()
    monkeypatch.chdir(tmp_path / "pkg")
    assert "pkg/train.py" in uris(sarif())


def test_outside_a_repository_uris_are_relative_to_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if any((folder / ".git").exists() for folder in (tmp_path, *tmp_path.parents)):
        pytest.skip("the temporary folder is inside a git repository")
    log = sarif()
    assert "train.py" in uris(log)
    assert log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"


def test_paths_leading_out_of_the_repository_are_file_uris(tmp_path):
    root = tmp_path / "repo"
    assert artifact_location("../other/x.py", "sub", root) == {"uri": "other/x.py", "uriBaseId": "%SRCROOT%"}
    assert artifact_location("../../other/x.py", "sub", root) == {"uri": (tmp_path / "other" / "x.py").as_uri()}
    assert artifact_location("./a/../b.py", "sub", root) == {"uri": "sub/b.py", "uriBaseId": "%SRCROOT%"}


def test_rewrite_and_audit_uploads_have_their_own_category():
    report = sample_report()
    assert sarif(report)["runs"][0]["automationDetails"] == {"id": "neuron-migrate/rewrite/"}
    report.command = "audit"
    log = sarif(report)
    assert log["runs"][0]["automationDetails"] == {"id": "neuron-migrate/audit/"}
    jsonschema.Draft7Validator(SARIF_SCHEMA).validate(log)


def test_no_two_results_share_a_fingerprint():
    report = sample_report()
    train = report.files[0]
    copy = next(f for f in train.findings if f.rule == "NM110" and not f.suppressed)
    train.findings.append(Finding(copy.rule, copy.message, copy.path, Span(40, 5, 40, 19), copy.safety, True,
                                  before=copy.before))
    prints = [r["partialFingerprints"]["neuronMigrate/v1"] for r in sarif(report)["runs"][0]["results"]]
    assert len(prints) == len(set(prints))


def test_a_file_skipped_for_a_reason_of_its_own_is_a_warning_notification():
    report = sample_report()
    report.files.append(FileResult("gen/table.py", SKIPPED, error="2.1 MB of code, over the per-file size limit of 1 MB"))
    notes = sarif(report)["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert [(n["level"], n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]) for n in notes] == [
        ("error", "broken.py"), ("warning", "gen/table.py")]  # vendor/lib.py, excluded by the configuration: none
    assert "gen/table.py: skipped: 2.1 MB of code, over the per-file size limit of 1 MB" in notes[1]["message"]["text"]
