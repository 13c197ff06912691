"""``neuron-migrate audit`` (static): exit codes, --fail-on, formats, baselines, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from neuron_migrate.cli import app
from neuron_migrate.report.json_report import schema

SARIF_SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0.json").read_text(encoding="utf-8"))
HAZARD = "import torch\n\ntorch._dynamo.config.automatic_dynamic_shapes = False\nm = torch.compile(m, dynamic=True)\n"
LEGACY = "import torch_xla.core.xla_model as xm\n\nxm.mark_step()\n"
CLEAN = "import torch\n\nx = torch.ones(2)\n"
INFO_ONLY = "from torch.utils.data import DataLoader\n\nloader = DataLoader(ds, batch_size=8, shuffle=True)\n"


@pytest.fixture
def cli(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(app, ["audit", *map(str, args)], catch_exceptions=False)

    return invoke


def write(name: str, text: str) -> Path:
    path = Path(name)
    path.write_text(text, encoding="utf-8")
    return path


def test_clean_code_exits_0(cli):
    write("ok.py", CLEAN)
    result = cli("ok.py")
    assert result.exit_code == 0, result.output
    assert "0 error, 0 warning, 0 info" in result.output


def test_a_hazard_exits_1_with_line_rule_and_fix(cli):
    write("train.py", HAZARD)
    result = cli("train.py")
    assert result.exit_code == 1
    assert "train.py:4:5: NA104 [error]" in result.output
    assert "fix: drop dynamic=True" in result.output


def test_leftover_legacy_apis_are_reported_with_the_edit_that_fixes_them(cli):
    write("legacy.py", LEGACY)
    result = cli("legacy.py", "--format", "json")
    data = json.loads(result.stdout)
    rules = {f["rule"]: f for fr in data["files"] for f in fr["findings"]}
    assert rules["NM110"]["severity"] == "error" and not rules["NM110"]["applied"]
    assert "neuron-migrate rewrite" in rules["NM110"]["fix"]
    assert Path("legacy.py").read_text() == LEGACY, "the audit never writes"


def test_fail_on_sets_the_threshold(cli):
    write("loader.py", INFO_ONLY)
    assert cli("loader.py").exit_code == 0, "info findings do not fail the default --fail-on warning"
    assert cli("loader.py", "--fail-on", "info").exit_code == 1
    write("train.py", HAZARD)
    assert cli("train.py", "--fail-on", "never").exit_code == 0


def test_json_output_is_valid_against_the_report_schema(cli):
    write("train.py", HAZARD + "y = m.cuda()\n")
    result = cli("train.py", "--format", "json", "--output", "out/report.json")
    assert result.exit_code == 1
    data = json.loads(Path("out/report.json").read_text())
    jsonschema.Draft202012Validator(schema()).validate(data)
    assert data["command"] == "audit"
    assert {"NA104", "NA401"} <= {f["rule"] for fr in data["files"] for f in fr["findings"]}
    assert "NA104" in data["rules"] and data["rules"]["NA104"]["title"]


def test_sarif_output_is_valid_sarif(cli):
    write("train.py", HAZARD)
    result = cli("train.py", "--format", "sarif")
    log = json.loads(result.stdout)
    jsonschema.Draft7Validator(SARIF_SCHEMA).validate(log)
    (found,) = [r for r in log["runs"][0]["results"] if r["ruleId"] == "NA104"]
    assert found["level"] == "error"
    assert found["locations"][0]["physicalLocation"]["region"]["startLine"] == 4


@pytest.mark.parametrize("fmt,marker", [("md", "NA104"), ("html", "<html")])
def test_markdown_and_html_render(cli, fmt, marker):
    write("train.py", HAZARD)
    assert marker in cli("train.py", "--format", fmt).stdout


def test_baseline_is_a_ratchet(cli):
    write("train.py", HAZARD)
    first = cli("train.py", "--baseline", "nm-baseline.json")
    assert first.exit_code == 0 and "1 findings recorded" in first.output
    assert cli("train.py", "--baseline", "nm-baseline.json").exit_code == 0

    # The old finding moved down two lines and a new one appeared: only the new one fails.
    write("train.py", "import torch\n\n\n\n" + HAZARD.split("\n", 2)[2] + "x = x.cuda()\n")
    again = cli("train.py", "--baseline", "nm-baseline.json")
    assert again.exit_code == 1
    assert "NA401" in again.output and "NA104" not in again.output

    assert cli("train.py", "--baseline", "nm-baseline.json", "--update-baseline").exit_code == 0
    assert cli("train.py", "--baseline", "nm-baseline.json").exit_code == 0


def test_a_copied_line_is_new_to_the_baseline(cli):
    write("train.py", LEGACY)
    assert cli("train.py", "--baseline", "nm-baseline.json").exit_code == 0
    # The same call copied further down is a second finding, not the known one.
    write("train.py", "import os\n" + LEGACY + "evaluate()\nxm.mark_step()\n")
    again = cli("train.py", "--baseline", "nm-baseline.json")
    assert again.exit_code == 1, again.output
    assert "train.py:6:1: NM110" in again.output and "train.py:4:1" not in again.output
    assert "2 known findings not reported" in again.output  # the import and the first call


def test_a_broken_baseline_is_a_usage_error(cli):
    write("train.py", HAZARD)
    write("bad.json", "{not json")
    result = cli("train.py", "--baseline", "bad.json")
    assert result.exit_code == 2 and "cannot read the baseline" in result.output


def test_a_file_that_does_not_parse_is_reported_and_exits_2(cli):
    write("broken.py", "import torch\n\ndef f(:\n")
    write("train.py", HAZARD)
    result = cli(".")
    assert result.exit_code == 2
    assert "broken.py:3:" in result.output and "does not parse" in result.output
    assert "NA104" in result.output, "the other files are still audited"


def test_select_and_ignore_take_audit_ids(cli):
    write("train.py", HAZARD + "y = m.cuda()\n")
    only_cuda = cli("train.py", "--select", "NA4", "--format", "json")
    assert {f["rule"] for fr in json.loads(only_cuda.stdout)["files"] for f in fr["findings"]} == {"NA401"}
    assert cli("train.py", "--ignore", "NA1,NA4").exit_code == 0
    assert cli("train.py", "--select", "NA999").exit_code == 2


def test_missing_path_is_a_usage_error(cli):
    assert cli("nope.py").exit_code == 2


def test_no_path_audits_the_current_folder_as_rewrite_does(cli):
    write("train.py", HAZARD)
    result = cli("--format", "json")
    assert result.exit_code == 1, result.output
    assert [fr["path"] for fr in json.loads(result.stdout)["files"]] == ["train.py"]


def test_update_baseline_without_a_baseline_is_a_usage_error(cli):
    write("train.py", HAZARD)
    result = cli("train.py", "--update-baseline")
    assert result.exit_code == 2
    assert result.output == "neuron-migrate: error: --update-baseline needs --baseline FILE\n"


RUNTIME = Path(__file__).resolve().parents[1] / "fixtures" / "runtime"


def _neuron_migrate(command, *args, cwd):
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(RUNTIME.parents[1]))
    return subprocess.run(
        [sys.executable, "-m", "neuron_migrate", command, *map(str, args)],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
    )


def _audit_run(*args, cwd):
    return _neuron_migrate("audit", *args, cwd=cwd)


@pytest.mark.slow
def test_run_confirms_static_findings_and_adds_runtime_ones(tmp_path):
    script = tmp_path / "item_branch.py"
    script.write_text((RUNTIME / "item_branch.py").read_text())
    result = _audit_run("--run", script.name, "--format", "json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    findings = [f for fr in json.loads(result.stdout)["files"] for f in fr["findings"]]
    evidence = {(f["rule"], f["span"]["line"]): f["evidence"] for f in findings}
    assert evidence[("NA208", 9)] == "static+runtime"
    assert evidence[("NA201", 11)] == "static+runtime"
    assert evidence[("NA502", 9)] == "runtime"
    # The report has the breaks: dynamo's own multi-line warnings about them stay off the terminal.
    assert "Graph break" not in result.stderr, result.stderr


@pytest.mark.slow
def test_run_passes_arguments_and_a_clean_script_passes(tmp_path):
    script = tmp_path / "clean.py"
    script.write_text(
        "import sys\nimport torch\n\ntorch._dynamo.config.automatic_dynamic_shapes = False\n"
        "f = torch.compile(torch.nn.Linear(4, 4), backend='eager')\n"
        "for _ in range(int(sys.argv[1])):\n    f(torch.ones(2, 4))\nprint('ran', sys.argv[1:])\n"
    )
    result = _audit_run("--run", script.name, "--", "3", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 error, 0 warning, 0 info" in result.stdout


FAILING = {
    "raises.py": (
        "import torch\n\n\ndef shard(batch):\n    if batch.shape[0] % 2:\n"
        "        raise ValueError('odd batch')\n    return batch\n\n\n"
        "x = torch.ones(3, 4, device='neuron')\nshard(x)\n",
        6, "the program raised ValueError: odd batch",
    ),
    "exits.py": ("import sys\n\nimport torch\n\nx = torch.ones(2)\nsys.exit(3)\n", 6,
                 "the program exited with status 3"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FAILING))
def test_a_program_that_does_not_finish_is_an_error_and_fails_the_audit(tmp_path, name):
    source, line, message = FAILING[name]
    (tmp_path / name).write_text(source)
    for fail_on in ("warning", "never"):
        result = _audit_run("--run", name, "--format", "json", "--fail-on", fail_on, cwd=tmp_path)
        assert result.returncode == 1, result.stderr
        findings = [f for fr in json.loads(result.stdout)["files"] for f in fr["findings"]]
        failed = [f for f in findings if f["rule"] == "NA507"]
        assert [(f["path"], f["span"]["line"], f["severity"]) for f in failed] == [(name, line, "error")]
        assert failed[0]["message"] == message


@pytest.mark.parametrize("args", [("--run", "missing.py"), ("--run", "-m", "no_such_module"), ("-m", "no_such_module")])
def test_a_run_that_cannot_start_is_a_usage_error(tmp_path, args):
    result = _audit_run(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert "no such script" in result.stderr or "no module named" in result.stderr


@pytest.mark.slow
def test_run_takes_a_module_as_documented(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "job.py").write_text("import sys\n\nprint('ran', sys.argv[1:])\n")
    result = _audit_run("--run", "-m", "pkg.job", "--", "a", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "ran ['a']" in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("steps", ["0", "1"])
def test_a_compiled_step_with_its_optimizer_runs_to_the_end_under_the_recorder(tmp_path, steps):
    # Leaving the op recorder from the optimizer hook inside the compiled step once broke every later host read.
    script = tmp_path / "compiled_optimizer_step.py"
    script.write_text((RUNTIME / "compiled_optimizer_step.py").read_text())
    result = _audit_run("--run", script.name, "--steps", steps, "--format", "json", cwd=tmp_path)
    assert "INTERNAL ASSERT" not in result.stderr, result.stderr[-3000:]
    printed, _, report = result.stdout.partition("\n{")
    assert "step 2 loss" in printed
    findings = [f for fr in json.loads("{" + report)["files"] for f in fr["findings"]]
    assert not [f for f in findings if f["rule"] == "NA507"]
    breaks = [f for f in findings if f["rule"] == "NA502"]
    assert breaks and not any("_python_dispatch" in f["message"] for f in breaks)


@pytest.mark.slow
def test_a_program_that_never_uses_the_neuron_device_is_warned_about(tmp_path):
    script = tmp_path / "falls_back.py"
    script.write_text(
        "import torch\n\n\ndef pick(name):\n    if name == 'neuron':\n        return torch.device('neuron')\n"
        "    return torch.device('cpu')\n\n\nprint(torch.ones(2, device=pick('xla')).sum().item())\n"
    )
    used = tmp_path / "uses_it.py"
    used.write_text("import torch\n\nprint(torch.ones(2, device='neuron').sum().item())\n")
    audit = _audit_run("--run", script.name, cwd=tmp_path)
    assert "no tensor was placed on neuron" in audit.stdout + audit.stderr
    emulate = _neuron_migrate("emulate", script.name, cwd=tmp_path)
    assert emulate.returncode == 0 and "no tensor was placed on neuron" in emulate.stderr
    for run in (_audit_run("--run", used.name, cwd=tmp_path), _neuron_migrate("emulate", used.name, cwd=tmp_path)):
        assert run.returncode == 0 and "no tensor was placed" not in run.stdout + run.stderr



def test_the_table_of_a_warm_audit_needs_no_rule_metadata(cli, monkeypatch):
    from neuron_migrate.rules import catalog

    write("train.py", HAZARD + LEGACY)
    first = cli("train.py")
    # loading every rule (and LibCST) to describe them was half of a warm run: the table never shows them
    monkeypatch.setattr(catalog, "catalog", lambda: pytest.fail("the rule catalog was loaded"))
    again = cli("train.py")
    assert again.exit_code == first.exit_code == 1 and again.output == first.output


def test_a_baseline_that_is_a_folder_is_named_once(cli):
    write("train.py", HAZARD)
    Path("known").mkdir()
    result = cli("train.py", "--baseline", "known")
    assert result.exit_code == 2
    assert result.output.count("known") == 1, result.output
