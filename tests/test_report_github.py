"""GitHub Actions annotations: GitHub shows 10 of each level per step and drops the rest silently, so the
output is capped, the most important come first, and a closing notice says what was left out and where."""

from __future__ import annotations

from neuron_migrate.report.github import PER_LEVEL
from neuron_migrate.report.model import FAILED, MANUAL, REVIEW, SAFE, WARNING, FileResult, Finding, Report, Span
from neuron_migrate.report.render import render


def finding(path: str, line: int, safety: str, applied: bool, rule: str = "NM110", severity: str = "info") -> Finding:
    return Finding(rule, f"{rule} at {line}", path, Span(line, 1, line, 5), safety, applied, severity=severity)


def report(mode: str = "check", files: list[FileResult] | None = None) -> Report:
    return Report(tool_version="0", command="neuron-migrate", mode=mode, files=files or [])


def big_rewrite() -> Report:
    """Many folders of safe edits first in path order, the manual work and review edits in the last one."""
    files = [FileResult(f"a{i:02}/train.py", findings=[finding(f"a{i:02}/train.py", n, SAFE, True)
                                                      for n in range(1, 4)]) for i in range(20)]
    late = [finding("z/last.py", n, MANUAL, False, rule="NM135") for n in range(1, 13)]
    late += [finding("z/last.py", 100 + n, REVIEW, True, rule="NM113") for n in range(3)]
    files.append(FileResult("z/last.py", findings=late))
    files.append(FileResult("zz/broken.py", status=FAILED, error="3:9: cannot parse"))
    return report(files=files)


def levels(lines: list[str]) -> list[str]:
    return [line[2:line.index(" ")] for line in lines]


def test_at_most_ten_of_each_level_and_a_closing_notice():
    lines = render(big_rewrite(), "github").splitlines()
    kinds = levels(lines)
    assert kinds.count("error") == 1 and kinds.count("warning") == PER_LEVEL
    assert kinds.count("notice") == PER_LEVEL  # nine findings and the closing notice
    closing = lines[-1]
    assert closing.startswith("::notice title=neuron-migrate::")
    # 12 manual warnings, 3 review + 60 safe notices: 2 + (63 - 9) left out
    assert "56 findings left out" in closing and "2 warnings, 54 notices" in closing
    assert "neuron-migrate rewrite --check --report" in closing


def test_most_important_first():
    lines = render(big_rewrite(), "github").splitlines()
    assert lines[0].startswith("::error file=zz/broken.py,")
    assert all("title=NM135" in line for line in lines[1:11])  # the manual work of the last folder
    notices = [line for line in lines if line.startswith("::notice file=")]
    assert all("title=NM113" in line for line in notices[:3])  # review edits before safe ones
    assert "file=a00/train.py" in notices[3]


def test_closing_notice_names_the_full_report():
    text = render(big_rewrite(), "github", full_report="out/migration.sarif")
    assert "every finding is in out/migration.sarif" in text.splitlines()[-1]


def test_audit_levels_follow_severity_and_the_notice_says_how_to_get_all():
    findings = [finding("a.py", n, MANUAL, False, rule="NM100", severity=WARNING) for n in range(1, 30)]
    text = render(report("static", [FileResult("a.py", findings=findings)]), "github")
    lines = text.splitlines()
    assert levels(lines).count("warning") == PER_LEVEL and len(lines) == PER_LEVEL + 1
    assert "19 findings left out of these annotations (19 warnings)" in lines[-1] and "neuron-migrate audit --format" in lines[-1]
    assert [line.split(",")[1] for line in lines[:3]] == ["line=1", "line=2", "line=3"]


def test_nothing_left_out_means_no_closing_notice():
    files = [FileResult("a.py", findings=[finding("a.py", n, SAFE, True) for n in range(1, PER_LEVEL + 1)])]
    lines = render(report(files=files), "github").splitlines()
    assert len(lines) == PER_LEVEL and not any("left out" in line for line in lines)
