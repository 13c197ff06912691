"""The command line: exit codes, what each mode writes and prints, reports, rule selection, ``rules``."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser

import pytest
from typer.testing import CliRunner

from conftest import ROOT
from neuron_migrate import __version__
from neuron_migrate.cli import app
from neuron_migrate.report import terminal
from neuron_migrate.report.model import CHANGED, FAILED, MANUAL, REVIEW, SAFE, FileResult, Finding, Report, Span
from neuron_migrate.rules import catalog
from neuron_migrate.rules.base import all_rules, get_rule

LEGACY = get_rule("NM110").meta.example.before
MIGRATED = get_rule("NM110").meta.example.after
CLEAN = "import torch\n\nx = torch.ones(2)\n"


@pytest.fixture
def cli(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)

    return invoke


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A folder with one legacy and one clean file; the working directory is the folder."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "legacy.py").write_text(LEGACY, encoding="utf-8")
    (tmp_path / "clean.py").write_text(CLEAN, encoding="utf-8")
    return tmp_path


# ----- rewrite: modes and exit codes -----------------------------------------------------------


def test_rewrite_writes_and_exits_1(cli, project):
    result = cli("rewrite", project)
    assert result.exit_code == 1, result.output
    assert (project / "legacy.py").read_text() == MIGRATED
    assert (project / "clean.py").read_text() == CLEAN
    # Piped output: one greppable line per finding.
    line = next(l for l in result.stdout.splitlines() if "NM110" in l)
    assert "legacy.py:6:5: NM110 [safe]" in line


def test_second_rewrite_exits_0(cli, project):
    assert cli("rewrite", project).exit_code == 1
    result = cli("rewrite", project)
    assert result.exit_code == 0, result.output
    assert (project / "legacy.py").read_text() == MIGRATED


def test_clean_file_exits_0(cli, project):
    result = cli("rewrite", project / "clean.py")
    assert result.exit_code == 0, result.output


def test_diff_prints_the_patch_and_writes_nothing(cli, project):
    result = cli("rewrite", "--diff", project)
    assert result.exit_code == 1
    assert (project / "legacy.py").read_text() == LEGACY
    assert "-    xm.mark_step()" in result.stdout
    assert "+++ " in result.stdout
    # The summary goes to stderr so that stdout is a patch and nothing else.
    assert "NM110" not in result.stdout.replace("xm.mark_step", "")
    assert "files:" in result.stderr


def test_check_writes_nothing(cli, project):
    result = cli("rewrite", "--check", project)
    assert result.exit_code == 1
    assert (project / "legacy.py").read_text() == LEGACY
    assert "would change" in result.stdout
    assert cli("rewrite", "--check", project / "clean.py").exit_code == 0


def test_diff_and_check_together_is_a_usage_error(cli, project):
    result = cli("rewrite", "--diff", "--check", project)
    assert result.exit_code == 2
    assert (project / "legacy.py").read_text() == LEGACY


def test_missing_path_or_bad_flag_is_a_usage_error(cli, project):
    assert cli("rewrite", project / "nope.py").exit_code == 2
    assert cli("rewrite", "--bogus", project).exit_code == 2
    assert cli("rewrite", "-", project).exit_code == 2


def test_rewrite_without_paths_takes_the_current_folder(cli, project):
    result = cli("rewrite", "--check")
    assert result.exit_code == 1 and "legacy.py:6:5: NM110" in result.stdout
    assert (project / "legacy.py").read_text() == LEGACY


def _stdin(*args, text):
    return CliRunner().invoke(app, ["rewrite", "-", *args], input=text, catch_exceptions=False)


def test_rewrite_of_stdin_prints_the_rewritten_code(project):
    changed = _stdin(text=LEGACY)
    assert changed.exit_code == 1 and changed.stdout == MIGRATED
    assert "stdin.py:6:5: NM110 [safe]" in changed.stderr
    clean = _stdin(text=CLEAN)
    assert clean.exit_code == 0 and clean.stdout == CLEAN
    diff = _stdin("--diff", "--stdin-filename", "train.py", text=LEGACY)
    assert diff.exit_code == 1 and diff.stdout.startswith("--- a/train.py\n+++ b/train.py\n")
    assert _stdin("--check", text=LEGACY).stdout == ""
    broken = _stdin(text="def (:\n")
    assert broken.exit_code == 2 and broken.stdout == "def (:\n" and "syntax error" in broken.stderr
    shell = _stdin("--stdin-filename", "run.sh", text="export XLA_USE_BF16=1\npython train.py\n")
    assert shell.exit_code == 1 and "XLA_USE_BF16=1" not in shell.stdout.replace("# ", "")
    assert (project / "legacy.py").read_text() == LEGACY


def test_unparsable_file_exits_2_and_is_untouched(cli, project):
    broken = "import torch_xla.core.xla_model as xm\nxm.mark_step(\n"
    (project / "broken.py").write_text(broken, encoding="utf-8")
    result = cli("rewrite", project)
    assert result.exit_code == 2
    assert (project / "broken.py").read_text() == broken
    assert result.stderr.startswith("broken.py:2:13: error: ")
    # The other files are still processed.
    assert (project / "legacy.py").read_text() == MIGRATED


def test_quiet_prints_one_line(cli, project):
    result = cli("rewrite", "--quiet", project)
    assert result.exit_code == 1
    assert result.stdout.strip().splitlines() == [result.stdout.strip()]
    assert result.stdout.startswith("neuron-migrate: 2 files, 1 changed, 0 failed")


def test_no_comments_leaves_no_markers(cli, project):
    (project / "legacy.py").write_text(get_rule("NM100").meta.example.before, encoding="utf-8")
    result = cli("rewrite", "--no-comments", project / "legacy.py")
    assert result.exit_code == 0
    assert "TODO(neuron-migrate" not in (project / "legacy.py").read_text()
    assert "NM100 [manual]" in result.stdout


def test_no_cache_and_jobs_are_accepted(cli, project):
    result = cli("rewrite", "--no-cache", "--jobs", "1", project)
    assert result.exit_code == 1
    assert cli("rewrite", "--jobs", "0", project).exit_code == 2


# ----- reports ---------------------------------------------------------------------------------


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)


def _check_json(text):
    data = json.loads(text)
    assert data["totals"]["changed"] == 1
    assert any(f["rule"] == "NM110" for fr in data["files"] for f in fr["findings"])


def _check_sarif(text):
    data = json.loads(text)
    assert data["version"] == "2.1.0"
    assert any(r["ruleId"] == "NM110" for run in data["runs"] for r in run["results"])


def _check_md(text):
    assert text.startswith("#")
    assert "legacy.py" in text


def _check_html(text):
    parser = _Tags()
    parser.feed(text)
    assert {"html", "body"} <= parser.tags
    assert "NM110" in text


REPORTS = {".json": _check_json, ".sarif": _check_sarif, ".md": _check_md, ".html": _check_html}
RENDERERS = {".json": "json_report", ".sarif": "sarif", ".md": "markdown", ".html": "html"}


@pytest.mark.parametrize("suffix", sorted(REPORTS))
def test_report_in_each_format(cli, project, suffix):
    pytest.importorskip(f"neuron_migrate.report.{RENDERERS[suffix]}")
    out = project / "reports" / f"migration{suffix}"
    result = cli("rewrite", "--check", "--report", out, project)
    assert result.exit_code == 1, result.output
    assert f"report: {out}" in result.stdout
    REPORTS[suffix](out.read_text(encoding="utf-8"))


def test_unknown_report_extension_is_a_usage_error(cli, project):
    result = cli("rewrite", "--report", project / "out.txt", project)
    assert result.exit_code == 2
    assert ".json" in result.output
    assert (project / "legacy.py").read_text() == LEGACY
    assert not (project / "out.txt").exists()


# ----- rule selection and configuration --------------------------------------------------------


def test_select_limits_the_rules(cli, project):
    result = cli("rewrite", "--select", "NM190", project)
    assert result.exit_code == 0
    assert (project / "legacy.py").read_text() == LEGACY


def test_select_accepts_prefixes_and_lists(cli, project):
    result = cli("rewrite", "--select", "nm19,NM110", project)
    assert result.exit_code == 1
    assert (project / "legacy.py").read_text() == MIGRATED


def test_ignore_skips_rules(cli, project):
    result = cli("rewrite", "--ignore", "NM1", project)
    assert result.exit_code == 0
    assert (project / "legacy.py").read_text() == LEGACY


def test_unknown_rule_id_is_a_usage_error(cli, project):
    result = cli("rewrite", "--select", "NM11O", project)
    assert result.exit_code == 2
    assert "NM11O" in result.output
    assert "NM110" in result.output  # the close id is suggested
    assert (project / "legacy.py").read_text() == LEGACY
    assert cli("rewrite", "--ignore", "XX1", project).exit_code == 2


def test_pyproject_config_is_picked_up(cli, project):
    (project / "pyproject.toml").write_text('[tool.neuron-migrate]\nignore = ["NM110"]\nno-comments = true\n')
    result = cli("rewrite", project)
    assert result.exit_code == 0, result.output
    assert (project / "legacy.py").read_text() == LEGACY
    # Flags override the file.
    assert cli("rewrite", "--select", "NM110", "--ignore", "NM9", project).exit_code == 2
    assert cli("rewrite", "--select", "NM110", "--ignore", "NM190", project).exit_code == 1
    assert (project / "legacy.py").read_text() == MIGRATED


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ('selct = ["NM1"]\n', "selct"),
        ("jobs = -1\n", "jobs"),
        ('select = ["NM999"]\n', "NM999"),
        ("select = [\n", "pyproject.toml"),
    ],
)
def test_bad_config_exits_2_naming_the_problem(cli, project, body, named):
    (project / "pyproject.toml").write_text("[tool.neuron-migrate]\n" + body)
    result = cli("rewrite", project)
    assert result.exit_code == 2
    assert named in result.stderr
    assert (project / "legacy.py").read_text() == LEGACY


# ----- rules -----------------------------------------------------------------------------------


def test_rules_lists_every_rule(cli):
    result = cli("rules")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["ID", "SAFETY", "TITLE", "RISKS"]
    for rule in all_rules():
        assert any(l.startswith(rule.meta.id) and rule.meta.title in l for l in lines)


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.meta.id)
def test_rules_id_shows_the_example(cli, rule):
    result = cli("rules", rule.meta.id.lower())
    assert result.exit_code == 0
    meta = rule.meta
    assert result.stdout.startswith(f"{meta.id}: {meta.title}\n")
    assert f"safety: {meta.safety}" in result.stdout
    for url in meta.docs:
        assert url in result.stdout
    if meta.example.before == meta.example.after:
        assert meta.example.before in result.stdout
    else:
        assert catalog.example_diff(meta.example, meta.kind) in result.stdout


def test_example_diff_applies_to_before():
    example = get_rule("NM110").meta.example
    diff = catalog.example_diff(example)
    assert diff.startswith("--- a/example.py\n+++ b/example.py\n")
    kept = [l[1:] for l in diff.splitlines(keepends=True)[3:] if l[0] in " +"]
    assert "".join(kept) in example.after


def test_rules_on_a_terminal(cli, monkeypatch):
    monkeypatch.setattr(terminal, "is_plain", lambda stream: False)
    table = cli("rules")
    assert table.exit_code == 0
    assert "NM110" in table.stdout and "safety" in table.stdout
    assert "NA507" in table.stdout and "audit error" in table.stdout
    one = cli("rules", "NM110")
    assert one.exit_code == 0
    assert "xm.mark_step()" in one.stdout and "example:" in one.stdout


def test_unknown_rule_lists_close_ids(cli):
    result = cli("rules", "NM11")
    assert result.exit_code == 2
    assert "NM110" in result.stderr


def test_rules_markdown_is_the_catalog(cli):
    result = cli("rules", "--format", "markdown")
    assert result.exit_code == 0
    assert result.stdout == catalog.markdown()


def test_rules_json(cli):
    data = json.loads(cli("rules", "--format", "json").stdout)
    assert set(data) == {r.meta.id for r in all_rules()}
    one = json.loads(cli("rules", "NM110", "--format", "json").stdout)
    assert one["example"]["after"] == MIGRATED


def test_version(cli):
    result = cli("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"neuron-migrate {__version__}"


def test_python_dash_m(project):
    run = [sys.executable, "-m", "neuron_migrate"]
    # The checkout on the path, in case the package is not installed.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    version = subprocess.run([*run, "--version"], capture_output=True, text=True, env=env)
    assert version.stdout.strip() == f"neuron-migrate {__version__}", version.stderr
    check = subprocess.run([*run, "rewrite", "--check", str(project)], capture_output=True, text=True, env=env)
    assert check.returncode == 1, check.stderr
    assert "legacy.py:6:5: NM110 [safe]" in check.stdout
    assert (project / "legacy.py").read_text() == LEGACY


# ----- terminal output -------------------------------------------------------------------------


def _finding(rule, safety, applied, line, risks=(), path="train.py", cell=None):
    return Finding(
        rule=rule,
        message=f"{rule} message",
        path=path,
        span=Span(line, 5, line, 9),
        safety=safety,
        applied=applied,
        risks=risks,
        cell=cell,
    ).finalize()


def _sample_report(mode="write"):
    findings = [
        _finding("NM110", SAFE, True, 3),
        _finding("NM130", REVIEW, True, 7, risks=("collectives",)),
        _finding("NM100", MANUAL, False, 9, risks=("numerics",)),
    ]
    return Report(
        tool_version=__version__,
        command="rewrite",
        mode=mode,
        files=[
            FileResult("train.py", status=CHANGED, findings=findings),
            FileResult("bad.py", status=FAILED, error="cannot parse: line 2"),
        ],
    )


def test_plain_output_is_one_line_per_finding():
    out, err = io.StringIO(), io.StringIO()
    terminal.Terminal(out, err, plain=True).show(_sample_report("check"), report_path="r.json")
    lines = out.getvalue().splitlines()
    assert lines[:3] == [
        "train.py:3:5: NM110 [safe] NM110 message",
        "train.py:7:5: NM130 [review] NM130 message",
        "train.py:9:5: NM100 [manual] NM100 message",
    ]
    assert "files: 2 scanned, 1 would change, 1 failed, 0 skipped" in lines
    assert "edits: 2 (1 safe, 1 review); manual: 1; suppressed: 0" in lines  # no third kind: not named
    assert "checklist: numerics 1, collectives 1" in lines
    assert lines[-1] == "report: r.json"
    assert err.getvalue() == "bad.py: error: cannot parse: line 2\n"


def test_rich_summary_lists_what_needs_a_human():
    out, err = io.StringIO(), io.StringIO()
    terminal.Terminal(out, err, plain=False).show(_sample_report(), report_path="r.html")
    text = out.getvalue()
    # Work left to a human, counted as every report counts it; the review edit is on the checklist.
    assert "Needs a human (1)" in text
    assert "train.py:7:5 NM130 NM130 message" not in text
    assert "train.py:9:5 NM100 NM100 message" in text
    assert "train.py:3:5 NM110" not in text
    assert "Reviewer checklist" in text and "collectives" in text and "numerics" in text
    assert "Report written to r.html" in text
    assert "bad.py: error:" in err.getvalue()


def test_quiet_keeps_errors_and_one_line():
    out, err = io.StringIO(), io.StringIO()
    terminal.Terminal(out, err, quiet=True, plain=False).show(_sample_report())
    assert out.getvalue() == "neuron-migrate: 2 files, 1 changed, 1 failed; 2 edits (1 review), 1 manual\n"
    assert err.getvalue().startswith("bad.py: error:")


@pytest.mark.parametrize(
    ("error", "line"),
    [
        ("bad.py:2:13: syntax error: '(' was never closed", "bad.py:2:13: error: syntax error: '(' was never closed"),
        ("bad.py: cannot be read: Permission denied", "bad.py: error: cannot be read: Permission denied"),
        ("not UTF-8", "bad.py: error: not UTF-8"),
        ("", "bad.py: error: could not be processed"),
    ],
)
def test_error_lines(error, line):
    assert terminal.error_line("bad.py", error) == line


def test_notebook_findings_name_the_cell():
    finding = _finding("NM110", SAFE, True, 2, path="nb.ipynb", cell=3)
    assert terminal.finding_line(finding) == "nb.ipynb:cell 3:2:5: NM110 [safe] NM110 message"


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_plain_when_piped_or_a_dumb_terminal(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert terminal.is_plain(io.StringIO())
    assert not terminal.is_plain(_Tty())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not terminal.is_plain(_Tty())  # no colours, same layout
    monkeypatch.setenv("TERM", "dumb")
    assert terminal.is_plain(_Tty())


ANSI = re.compile(r"\x1b\[[0-9;]*m")
COLOUR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-9]|9[0-7]|38;[0-9;]+)m")


@pytest.mark.parametrize("show", ["show", "show_audit"])
def test_no_color_drops_the_colours_and_keeps_the_layout(monkeypatch, show):
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLUMNS", "120")

    def shown(no_color: bool) -> str:
        if no_color:
            monkeypatch.setenv("NO_COLOR", "1")
        else:
            monkeypatch.delenv("NO_COLOR", raising=False)
        out = _Tty()
        getattr(terminal.Terminal(out, io.StringIO()), show)(_sample_report("check"))
        return out.getvalue()

    coloured, plain = shown(False), shown(True)
    assert COLOUR.search(coloured) and not COLOUR.search(plain)
    assert ANSI.sub("", plain).splitlines() == ANSI.sub("", coloured).splitlines()


def test_progress_bar_only_for_long_runs():
    from rich.console import Console

    console = Console(file=_Tty(), force_terminal=True)
    with terminal.RunProgress(console) as progress:
        for done in range(1, 6):
            progress(done, 5, f"f{done}.py")
        assert progress.bar is None  # a quick, small run shows no bar
    with terminal.RunProgress(console) as progress:
        progress(1, 500, "a.py")
        assert progress.bar is not None
    assert progress.bar is None  # stopped on exit
    with terminal.RunProgress(console, delay=0.0) as progress:  # a run that has taken a while
        progress(1, 3, "slow.py")
        assert progress.bar is not None
    with terminal.RunProgress(None) as progress:
        progress(1, 500, "a.py")
        assert progress.bar is None


@pytest.mark.slow
def test_the_diff_of_an_example_project_applies_with_git_apply(tmp_path):
    """`rewrite --diff > migration.patch` is a patch git takes whole, notebooks included (as JSON text)."""
    import shutil

    project = tmp_path / "project"
    shutil.copytree(ROOT / "examples" / "xla-training", project)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    diff = subprocess.run([sys.executable, "-m", "neuron_migrate", "rewrite", "--diff", "--no-cache", "."],
                          cwd=project, env=env, capture_output=True, text=True)
    assert diff.returncode == 1, diff.stderr
    assert "+++ b/explore.ipynb\n" in diff.stdout and ":cell " not in diff.stdout
    patch = tmp_path / "migration.patch"
    patch.write_text(diff.stdout)
    subprocess.run([*git, "apply", str(patch)], cwd=project, check=True)
    after = subprocess.run([sys.executable, "-m", "neuron_migrate", "rewrite", "--check", "--no-cache", "."],
                           cwd=project, env=env, capture_output=True, text=True)
    assert after.returncode == 0, after.stdout  # the applied patch is exactly the rewrite


def test_report_may_be_repeated_for_several_formats(cli, project):
    result = cli("rewrite", "--check", project, "--report", "out/r.json", "--report", "out/r.sarif")
    assert result.exit_code == 1
    assert json.loads((project / "out" / "r.json").read_text())["files"]
    assert json.loads((project / "out" / "r.sarif").read_text())["version"] == "2.1.0"


def _interrupted_run(tmp_path, signals: int):
    import signal
    import time

    legacy = (ROOT / "examples" / "xla-training" / "train.py").read_text(encoding="utf-8")
    tree = tmp_path / "tree"
    tree.mkdir()
    for number in range(300):
        (tree / f"train_{number}.py").write_text(legacy, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.Popen([sys.executable, "-m", "neuron_migrate", "rewrite", "--no-cache", "--jobs", "2", str(tree)],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.5)
    sent = time.perf_counter()
    for _ in range(signals):
        run.send_signal(signal.SIGINT)
        time.sleep(0.05)
    _, stderr = run.communicate(timeout=60)
    return run.returncode, time.perf_counter() - sent, stderr, tree, legacy


@pytest.mark.slow
def test_ctrl_c_stops_within_a_second_and_leaves_no_file_half_written(tmp_path):
    code, took, stderr, tree, legacy = _interrupted_run(tmp_path, signals=1)
    assert code == 130 and took < 3.0, (code, took, stderr[-2000:])  # about 0.6 s on an idle machine
    assert "interrupted" in stderr and "Traceback" not in stderr
    for path in tree.iterdir():
        text = path.read_text(encoding="utf-8")
        if text != legacy:  # written: it must be the whole rewrite of that file (its name is in the launch text)
            whole = CliRunner().invoke(app, ["rewrite", "-", "--stdin-filename", path.name], input=legacy).stdout
            assert text == whole, path.name


@pytest.mark.slow
def test_a_second_ctrl_c_exits_at_once(tmp_path):
    code, took, stderr, _, _ = _interrupted_run(tmp_path, signals=2)
    assert code in (130, -2) and took < 3.0, (code, took, stderr[-2000:])
    assert "Traceback" not in stderr


@pytest.mark.parametrize("args", [["emulate", "train.py"], ["audit", "--run", "train.py"]])
def test_runtime_commands_without_torch_name_the_extra_to_install(args, project, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    (project / "train.py").write_text(CLEAN, encoding="utf-8")
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "pip install 'neuron-migrate[runtime]'" in result.stderr and "Traceback" not in result.output


def test_github_annotations_and_statistics(cli, project):
    (project / "run.sh").write_text("export XLA_USE_BF16=1\npython legacy.py\n", encoding="utf-8")
    github = cli("rewrite", "--check", "--output-format", "github", project)
    assert github.exit_code == 1
    lines = github.stdout.splitlines()
    assert lines and all(line.startswith(("::notice ", "::warning ", "::error ")) for line in lines)
    mark_step = next(line for line in lines if "title=NM110" in line)
    assert mark_step.startswith("::notice file=legacy.py,line=6,col=5,")
    assert any(line.startswith("::warning file=run.sh,") and "%0A" not in line.split("::", 2)[1] for line in lines)
    stats = cli("rewrite", "--check", "--statistics", project)
    rows = [line.split() for line in stats.stdout.splitlines() if line[:1].isspace() or line[:1].isdigit()]
    assert ["1", "NM110", "[safe]", "applied"] == rows[[r[1] for r in rows].index("NM110")][:4]
    audit = CliRunner().invoke(app, ["audit", str(project), "--format", "github"])
    assert audit.exit_code == 1 and "::error file=legacy.py,line=6,col=5," in audit.stdout  # legacy APIs are errors


def test_github_messages_and_properties_are_escaped():
    from neuron_migrate.report.github import annotation

    finding = Finding("NM100", "100% of it\nleft", "a,b:c.py", Span(3, 1, 3, 9), MANUAL, False, fix="do x")
    assert annotation(finding, "title, with: marks") == (
        "::warning file=a%2Cb%3Ac.py,line=3,col=1,endLine=3,endColumn=9,title=NM100 title%2C with%3A marks"
        "::100%25 of it%0Aleft%0Afix: do x"
    )


def test_diff_is_coloured_on_a_terminal_only():
    from neuron_migrate.cli import coloured_diff

    patch = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-old\n+new\n same\n"
    coloured = coloured_diff(patch)
    assert "\x1b[31m-old\x1b[0m\n" in coloured and "\x1b[32m+new\x1b[0m\n" in coloured
    assert " same\n" in coloured and "\x1b[36m@@ -1 +1 @@\x1b[0m" in coloured
    assert coloured.replace("\x1b[0m", "").replace("\x1b[31m", "").replace("\x1b[32m", "").replace(
        "\x1b[36m", "").replace("\x1b[1m", "") == patch


def test_progress_shows_the_end_of_a_long_path():
    from rich.console import Console

    console = Console(file=_Tty(), force_terminal=True, width=100)
    with terminal.RunProgress(console, delay=0.0) as progress:
        long = "very/" * 40 + "deep/train_step.py"
        progress(1, 3, long)
        shown = progress._fitted(long)
        assert shown.endswith("deep/train_step.py") and shown.startswith("…")
        assert len(shown) <= 100 - terminal.PROGRESS_FIXED_WIDTH
        assert progress._fitted("a.py") == "a.py"


def test_an_ignore_comment_naming_no_known_rule_is_warned_about(cli, project):
    (project / "typo.py").write_text(
        "import torch_xla.core.xla_model as xm\n\nxm.mark_step()  # neuron-migrate: ignore[NM11O,NM113]\n",
        encoding="utf-8",
    )
    for command in (["rewrite", "--check"], ["audit"]):
        result = CliRunner().invoke(app, [*command, str(project / "typo.py")])
        assert "typo.py:3: `neuron-migrate: ignore[NM11O]` names no known rule (did you mean NM110" in result.stderr
        assert "ignore[NM113]" not in result.stderr


@pytest.mark.parametrize(
    ("args", "diffs"),
    [(["--check"], False), ([], False), (["--diff"], True), (["--check", "--report", "r.md"], True),
     (["--check", "--report", "r.json"], True), (["--check", "--report", "r.html"], True),
     (["--check", "--report", "r.sarif"], False)],
)
def test_diffs_are_computed_only_for_output_that_shows_them(cli, project, monkeypatch, args, diffs):
    from neuron_migrate.migrate import write

    aligned = []
    real = write.matching_blocks
    monkeypatch.setattr(write, "matching_blocks", lambda a, b: aligned.append(1) or real(a, b))
    result = cli("rewrite", "--no-cache", *args, project)
    assert result.exit_code == 1, result.output
    assert bool(aligned) == diffs


@pytest.mark.parametrize("command", ["rewrite", "audit"])
def test_a_failure_names_its_file_once_in_every_output(cli, project, command):
    (project / "broken.py").write_text("import torch_xla\ndef f(:\n", encoding="utf-8")
    outputs = []
    if command == "rewrite":
        reports = [project / f"out.{ext}" for ext in ("md", "html", "sarif", "json")]
        result = cli("rewrite", "--check", *[arg for path in reports for arg in ("--report", path)], ".")
        outputs += [result.output, *(path.read_text(encoding="utf-8") for path in reports)]
        outputs.append(cli("rewrite", "--check", "--output-format", "github", ".").output)
    else:
        outputs += [cli("audit", ".", "--format", fmt).output for fmt in ("table", "md", "html", "sarif", "json")]
        outputs.append(cli("audit", ".", "--format", "github").stdout)
    for text in outputs:
        told = [line for line in text.splitlines() if "syntax error" in line or "does not parse" in line]
        assert told, text
        assert all(line.count("broken.py") <= 1 for line in told), told
    assert "::error file=broken.py,line=2,col=" in outputs[-1]


def test_edit_totals_add_up_with_the_edits_of_manual_rules():
    report = _sample_report("check")
    # an edit a manual rule made (a removed requirement whose code must still be ported): done, with a TODO
    report.files[0].findings.append(_finding("NM520", MANUAL, True, 11))
    t = report.totals()
    assert t["edits"] == t["safe"] + t["review"] + t["with_todo"] == 3
    out = io.StringIO()
    terminal.Terminal(out, io.StringIO(), plain=True).show(report)
    assert "edits: 3 (1 safe, 1 review, 1 with a TODO); manual: 2; suppressed: 0" in out.getvalue().splitlines()
    assert terminal.summary_line(report).endswith("; 3 edits (1 review, 1 with a TODO), 2 manual")
    rich = _Tty()
    terminal.Terminal(rich, io.StringIO(), plain=False).show(report)
    table = ANSI.sub("", rich.getvalue()).split("\n\n")[0].splitlines()[1:]
    rows = {" ".join(line.split()[:-1]): line.split()[-1] for line in table}
    assert int(rows["safe edits"]) + int(rows["review edits"]) + int(rows["edits with a TODO"]) == 3
