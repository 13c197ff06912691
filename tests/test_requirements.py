"""Requirement and project files (rules NM530-NM538): requirements files, pyproject.toml, setup.cfg
and environment.yml.

The fixtures under ``fixtures/requirements/<ID>/`` are run by ``test_rule_fixtures.py``; their extension
picks the adapter (txt: requirements file, toml: pyproject.toml, cfg: setup.cfg, yml: environment.yml).
"""

from __future__ import annotations

import shutil

import pytest
from conftest import FIXTURES, ROOT

from neuron_migrate.config import Config
from neuron_migrate.migrate import runner
from neuron_migrate.migrate.engine import RulePlan
from neuron_migrate.migrate.requirements import (
    rewrite_conda_env,
    rewrite_pyproject,
    rewrite_requirements,
    rewrite_setup_cfg,
)
from neuron_migrate.report.model import CHANGED, FAILED, MANUAL, REVIEW, SAFE, UNCHANGED
from neuron_migrate.rules.base import all_rules
from neuron_migrate.rules.requirements import (
    PACKAGE_PREFIXES,
    PACKAGES,
    Stack,
    capped_below,
    conda_requirement,
    migrate_requirement,
    parse_requirement,
    poetry_requirement,
)

FOLDER = FIXTURES / "requirements"


@pytest.fixture(scope="module")
def every_rule():
    return RulePlan.build()


def _run(adapter, text: str, plan, path: str = "requirements.txt", no_comments: bool = False):
    return adapter(text.encode("utf-8"), path, plan, no_comments)


def _text(outcome, original: str) -> str:
    assert outcome.status in (CHANGED, UNCHANGED), outcome.error
    return original if outcome.output is None else outcome.output.decode("utf-8")


def test_every_requirement_rule_has_a_fixture_and_a_table_row_or_a_role():
    rules = [r for r in all_rules() if r.meta.kind == "requirements"]
    # NM657-NM659: the --from cuda side (CUDA-only packages, CUDA runtime wheels, CUDA builds of PyTorch)
    assert [r.meta.id for r in rules] == [f"NM53{i}" for i in range(9)] + ["NM657", "NM658", "NM659"]
    for rule in rules:
        assert list((FOLDER / rule.meta.id).glob("*.before.*")), rule.meta.id
        # NM659 edits index URLs and local versions, which no package row names
        assert rule.packages() or rule.meta.id in ("NM537", "NM538", "NM659"), rule.meta.id
    assert {row.rule for row in (*PACKAGES.values(), *PACKAGE_PREFIXES.values())} <= {r.meta.id for r in rules}


# ----- requirements files ----------------------------------------------------------------------


def test_untouched_lines_keep_their_bytes(every_rule):
    kept = "  # indented comment\r\n-r base.txt\r\n-c constraints.txt\r\n-e ./local\r\n"
    spaced = "numpy  ==  1.26 ;  python_version<'3.12'  # spaces\r\n"
    text = kept + "torch-xla==2.1\r\n" + spaced
    out = _text(_run(rewrite_requirements, text, every_rule), text)
    assert out == kept + "torch>=2.13\r\n" + spaced


def test_bom_and_missing_final_newline_are_kept(every_rule):
    data = "\ufefftorch-neuronx==2.8.*\r\nlibneuronxla".encode("utf-8")
    outcome = rewrite_requirements(data, "requirements.txt", every_rule, False)
    assert outcome.output.startswith(b"\xef\xbb\xbf# neuron-migrate(NM531)")
    assert outcome.output.endswith(b"torch-neuronx>=2.14")
    assert b"\r\n" in outcome.output and b"\n" not in outcome.output.replace(b"\r\n", b"")


def test_a_replacement_on_the_last_line_keeps_the_missing_final_newline(every_rule):
    text = "datasets\noptimum-neuron[training]"
    out = _text(_run(rewrite_requirements, text, every_rule, no_comments=True), text)
    assert out == "datasets\ntransformers>=5.0\ntrl\npeft\naccelerate>=1.13"


def test_a_coding_cookie_is_honoured_and_bad_bytes_fail(every_rule):
    latin = "# -*- coding: latin-1 -*-\n# d\xe9pendances\ntorch-xla\n".encode("latin-1")
    outcome = rewrite_requirements(latin, "requirements.txt", every_rule, False)
    assert outcome.status == CHANGED and outcome.output.decode("latin-1").endswith("torch>=2.13\n")
    bad = b"# d\xe9pendances\ntorch-xla\n"
    outcome = rewrite_requirements(bad, "requirements.txt", every_rule, False)
    assert outcome.status == FAILED and outcome.output is None
    assert outcome.error.startswith("1:")


def test_no_comments_applies_the_edits_without_markers(every_rule):
    text = "torch-neuronx==2.8.*\nneuronx-distributed\n"
    outcome = _run(rewrite_requirements, text, every_rule, no_comments=True)
    assert _text(outcome, text) == "torch-neuronx>=2.14\n"
    assert [(f.rule, f.safety, f.applied) for f in outcome.findings] == [
        ("NM531", REVIEW, True),
        ("NM533", MANUAL, True),
    ]


def test_suppression_comment_keeps_the_line_and_reports_it(every_rule):
    text = "torch-neuronx==2.8.*  # neuron-migrate: ignore[NM531]\ntorch-xla  # neuron-migrate: ignore\ntorch==2.1\n"
    outcome = _run(rewrite_requirements, text, every_rule)
    out = _text(outcome, text)
    assert out.splitlines()[:2] == text.splitlines()[:2]
    suppressed = sorted(f.rule for f in outcome.findings if f.suppressed)
    assert suppressed == ["NM530", "NM531"]
    # the suppressed torch-xla line did not count as a removal: nothing adds torch twice or drops it
    assert out.endswith("torch>=2.13\n")


def test_only_selected_rules_apply():
    plan = RulePlan.build(select=("NM531",))
    text = "torch-neuronx==2.8.*\ntorch-xla\noptimum-neuron\n--extra-index-url https://pip.repos.neuron.amazonaws.com\n"
    outcome = _run(rewrite_requirements, text, plan)
    assert _text(outcome, text).count("neuron-migrate(") == 1
    assert {f.rule for f in outcome.findings} == {"NM531"}


def test_marker_is_not_added_twice(every_rule):
    marker = f"# neuron-migrate(NM531): {PACKAGES['torch-neuronx'].why}\n"
    text = marker + "torch-neuronx==2.8.*\n"
    assert _text(_run(rewrite_requirements, text, every_rule), text) == marker + "torch-neuronx>=2.14\n"


def test_index_marker_only_alongside_a_migration(every_rule):
    index = "--extra-index-url https://pip.repos.neuron.amazonaws.com\n"
    unchanged = _run(rewrite_requirements, index + "torch-neuronx>=2.14\n", every_rule)
    assert unchanged.status == UNCHANGED and not unchanged.findings
    changed = _run(rewrite_requirements, index + "torch==2.1\n", every_rule)
    assert "NM537" in {f.rule for f in changed.findings}


def test_other_options_of_a_changed_line_survive(every_rule):
    text = "torch==2.1.2 --config-settings=x=1 --hash=sha256:aa\ntorch-neuronx\n"
    out = _text(_run(rewrite_requirements, text, every_rule, no_comments=True), text)
    assert out == "torch>=2.13 --config-settings=x=1\ntorch-neuronx\n"


def test_a_requirement_split_over_lines_is_left_alone(every_rule):
    text = "torch-neuronx \\\n    ==2.8.*\n"
    outcome = _run(rewrite_requirements, text, every_rule)
    assert outcome.status == UNCHANGED


def test_removal_of_a_continued_requirement_takes_all_its_lines(every_rule):
    text = "torch-xla==2.1 \\\n    --hash=sha256:aa \\\n    --hash=sha256:bb\n# via x\ntorch>=2.13\n"
    assert _text(_run(rewrite_requirements, text, every_rule), text) == "# via x\ntorch>=2.13\n"


# ----- pyproject.toml ------------------------------------------------------------------------


def test_pyproject_keeps_everything_but_the_changed_items(every_rule):
    text = (
        "# top comment\n"
        "[project]\n"
        'name = "x"  # name\n'
        "dependencies = [\n"
        '    "datasets",  # data\n'
        "    'torch-xla==2.1.*',\n"
        '    "torch-neuronx==2.8.*",  # keep me\n'
        "]\n"
        "\n"
        "[tool.neuron-migrate]\n"
        'select = ["NM1"]\n'
    )
    out = _text(_run(rewrite_pyproject, text, every_rule, "pyproject.toml", no_comments=True), text)
    assert out == text.replace("    'torch-xla==2.1.*',\n", "    'torch>=2.13',\n").replace(
        '"torch-neuronx==2.8.*"', '"torch-neuronx>=2.14"'
    )


def test_pyproject_inline_array_stays_inline(every_rule):
    text = '[project]\nname = "x"\ndependencies = ["neuronx-distributed", "torch-xla", "numpy"]\n'
    out = _text(_run(rewrite_pyproject, text, every_rule, "pyproject.toml"), text)
    assert out.splitlines()[-1] == 'dependencies = ["torch>=2.13", "numpy"]'
    assert out.splitlines()[-2].startswith("# TODO(neuron-migrate NM533): neuronx-distributed removed")


def test_pyproject_suppression_and_poetry_string_styles(every_rule):
    text = (
        "[tool.poetry.dependencies]\n"
        "torch-neuronx = '2.8.*'\n"
        'torch-xla = "2.1"  # neuron-migrate: ignore\n'
        '"neuronx-cc" = { version = "==2.21.0", optional = true }\n'
    )
    outcome = _run(rewrite_pyproject, text, every_rule, "pyproject.toml", no_comments=True)
    out = _text(outcome, text)
    assert out == (
        "[tool.poetry.dependencies]\n"
        "torch-neuronx = '>=2.14'\n"
        'torch-xla = "2.1"  # neuron-migrate: ignore\n'
        '"neuronx-cc" = { version = "*", optional = true }\n'
    )
    assert [f.rule for f in outcome.findings if f.suppressed] == ["NM530"]
    assert {f.span.line for f in outcome.findings} == {2, 3, 4}


@pytest.mark.parametrize(
    "text",
    [
        '[project\ndependencies = ["torch-xla"]\n',
        '[project]\ndependencies = ["torch-xla",\n',
        "a = 1\na = 2\n# torch-xla\n",
    ],
)
def test_invalid_toml_fails_and_is_untouched(text, every_rule):
    outcome = _run(rewrite_pyproject, text, every_rule, "pyproject.toml")
    assert outcome.status == FAILED and outcome.output is None
    assert outcome.error[:1].isdigit() and "invalid TOML" in outcome.error


def test_pyproject_without_dependencies_is_unchanged(every_rule):
    text = '[tool.neuron-migrate]\nignore = ["NM100"]  # torch-xla is fine here\n'
    assert _run(rewrite_pyproject, text, every_rule, "pyproject.toml").status == UNCHANGED


# ----- setup.cfg and environment.yml ----------------------------------------------------------


def test_setup_cfg_parse_error_fails(every_rule):
    outcome = _run(rewrite_setup_cfg, "install_requires = torch-xla\n", every_rule, "setup.cfg")
    assert outcome.status == FAILED and outcome.error.startswith("1:1:")


def test_setup_cfg_other_keys_and_sections_are_not_requirements(every_rule):
    text = (
        "[metadata]\ndescription = torch-xla==2.1\n"
        "[options]\npython_requires = >=3.10\ninstall_requires =\n    torch-xla\n"
    )
    out = _text(_run(rewrite_setup_cfg, text, every_rule, "setup.cfg"), text)
    assert out == text.replace("    torch-xla\n", "    torch>=2.13\n")


def test_conda_env_only_reads_the_dependencies_list(every_rule):
    text = (
        "name: torch-xla==2.1\n"
        "channels:\n  - torch-xla\n"
        "dependencies:\n  - torch-xla  # gone\n"
        "variables:\n  - torch-xla\n"
    )
    out = _text(_run(rewrite_conda_env, text, every_rule, "environment.yml"), text)
    assert out == text.replace("  - torch-xla  # gone\n", "  - torch>=2.13  # gone\n")


def test_unreadable_conda_env_fails(every_rule):
    outcome = rewrite_conda_env(b"dependencies:\n  - torch-xla \xff\n", "environment.yml", every_rule, False)
    assert outcome.status == FAILED and outcome.error.startswith("2:")


# ----- the specifier logic ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "floor", "capped"),
    [
        ("torch-neuronx==2.8.0.2.10.16998", "2.14", True),
        ("torch-neuronx==2.1.2.*", "2.14", True),
        ("torch-neuronx==2.*", "2.14", False),
        ("torch-neuronx~=2.9", "2.14", False),
        ("torch-neuronx~=2.9.0", "2.14", True),
        ("torch-neuronx<2.14", "2.14", True),
        ("torch-neuronx<=2.14", "2.14", False),
        ("torch-neuronx>=2.1,<2.10", "2.14", True),
        ("torch-neuronx>=2.1", "2.14", False),
        ("torch-neuronx!=2.1", "2.14", False),
        ("torch-neuronx", "2.14", False),
        ("torch==2.1.2+cpu", "2.13", True),
        ("torch===2.13.0", "2.13", False),
        ("transformers<5", "5.0", True),
        ("transformers==4.*", "5.0", True),
        ("transformers==5.0.0rc1", "5.0", False),
    ],
)
def test_capped_below(spec, floor, capped):
    assert capped_below(parse_requirement(spec), floor) is capped


@pytest.mark.parametrize(
    ("constraint", "capped"),
    [
        ("~2.1", True),
        ("^2.1", False),
        ("^0.2", True),
        ("2.1.2", True),
        ("2.1.*", True),
        ("*", False),
        (">=2.1,<2.2", True),
        ("2.1.2 || 2.2.*", True),
        ("2.1.2 || >=2.13", False),
    ],
)
def test_poetry_constraints(constraint, capped):
    assert capped_below(poetry_requirement("torch", constraint), "2.13") is capped


@pytest.mark.parametrize(
    ("spec", "capped"),
    [
        ("pytorch=2.1", True),
        ("pytorch=2.1.2=py3.10_0", True),
        ("pytorch==2.1.2", True),
        ("pytorch 2.1.*", True),
        ("pytorch>=2.1,<2.2", True),
        ("pytorch>=2.1", False),
        ("pytorch", False),
        ("pytorch=2.14", False),
        ("pytorch 2.1.*|2.2.*", True),
    ],
)
def test_conda_specs(spec, capped):
    requirement = conda_requirement(spec)
    assert requirement.key == "torch"
    assert capped_below(requirement, "2.13") is capped


def test_migrate_requirement_for_pip_install_arguments():
    change = migrate_requirement('optimum-neuron[training]; python_version < "3.12"', Stack())
    assert change.rule == "NM532" and change.safety == REVIEW
    assert change.replacement == tuple(
        f'{r}; python_version < "3.12"' for r in ("transformers>=5.0", "trl", "peft", "accelerate>=1.13")
    )
    stack = Stack(present={"torch"})
    assert migrate_requirement("torch-xla==2.1", stack).replacement == ()
    assert migrate_requirement("torch-xla==2.1", stack).safety == SAFE
    assert migrate_requirement("torch==2.1.2", Stack(neuron=False)) is None
    assert migrate_requirement("numpy==1.26") is None
    assert migrate_requirement("not a requirement") is None


# ----- the examples and the pipeline -----------------------------------------------------------


def test_example_requirement_files_migrate(tmp_path, monkeypatch):
    for name in ("optimum-sft", "xla-training"):
        shutil.copy(ROOT / "examples" / name / "requirements.txt", tmp_path / f"{name}-requirements.txt")
    monkeypatch.chdir(tmp_path)
    report = runner.run([tmp_path], Config(cache=False, jobs=1, root=tmp_path))
    assert report.totals()["changed"] == 2 and not report.count(FAILED)
    sft = (tmp_path / "optimum-sft-requirements.txt").read_text(encoding="utf-8")
    assert [line for line in sft.splitlines() if not line.startswith("#")] == [
        "--extra-index-url https://pip.repos.neuron.amazonaws.com",
        "transformers>=5.0",
        "torch-neuronx>=2.14",
        "datasets",
        "peft",
    ]
    assert "# TODO(neuron-migrate NM533): neuronx-distributed removed" in sft
    xla = (tmp_path / "xla-training-requirements.txt").read_text(encoding="utf-8")
    assert [line for line in xla.splitlines() if not line.startswith("#")] == [
        "torch-neuronx>=2.14",
        "torch>=2.13",
        "neuronx-cc",
        "torchvision",
    ]
    again = runner.run([tmp_path], Config(cache=False, jobs=1, root=tmp_path), mode="check")
    assert again.totals()["changed"] == 0
