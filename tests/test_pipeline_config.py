"""[tool.neuron-migrate] in pyproject.toml, command-line overrides and the cache fingerprint."""

from __future__ import annotations

from pathlib import Path

import pytest

from neuron_migrate.config import Config, ConfigError, load_config


def write_pyproject(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pyproject.toml"
    path.write_text(body, encoding="utf-8")
    return path


def test_defaults_without_pyproject(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load_config([tmp_path])
    assert config.select == () and config.ignore == ()
    assert config.cache is True and config.no_comments is False and config.jobs is None
    assert config.source is None
    assert config.root == tmp_path.resolve()
    assert config.workers >= 1


def test_nearest_pyproject_with_a_section_wins(tmp_path):
    write_pyproject(tmp_path, '[tool.neuron-migrate]\nselect = ["NM1"]\n')
    # A nearer pyproject.toml without the section does not stop the search.
    write_pyproject(tmp_path / "pkg", '[project]\nname = "pkg"\n')
    (tmp_path / "pkg" / "src").mkdir()
    target = tmp_path / "pkg" / "src" / "train.py"
    target.write_text("x = 1\n")
    config = load_config([target])
    assert config.select == ("NM1",)
    assert config.source == tmp_path.resolve() / "pyproject.toml"
    assert config.root == tmp_path.resolve()


def test_every_key_in_kebab_case(tmp_path):
    write_pyproject(
        tmp_path,
        "[tool.neuron-migrate]\n"
        'select = ["NM1", "NM2"]\n'
        'ignore = ["NM150"]\n'
        'exclude = ["legacy/"]\n'
        'extend-exclude = ["*_pb2.py"]\n'
        "no-comments = true\n"
        "keep-dual-stack = true\n"
        "jobs = 3\n"
        "cache = false\n"
        'from = "cuda"\n',
    )
    config = load_config([tmp_path])
    assert config.keep_dual_stack is True
    assert config.migrate_from == "cuda"
    assert config.select == ("NM1", "NM2")
    assert config.ignore == ("NM150",)
    assert config.exclude == ("legacy/",)
    assert config.extend_exclude == ("*_pb2.py",)
    assert config.excludes == ("legacy/", "*_pb2.py")
    assert config.no_comments is True
    assert config.jobs == 3 and config.workers == 3
    assert config.cache is False


def test_keyword_arguments_override_the_file(tmp_path):
    write_pyproject(
        tmp_path,
        '[tool.neuron-migrate]\nselect = ["NM1"]\nexclude = ["a/"]\nextend-exclude = ["b/"]\njobs = 3\ncache = false\n',
    )
    config = load_config([tmp_path], select=["NM110"], jobs=1, cache=True, exclude=["c/"], extend_exclude=["d/"])
    assert config.select == ("NM110",)
    assert config.jobs == 1
    assert config.cache is True
    assert config.exclude == ("c/",)
    assert config.extend_exclude == ("b/", "d/")
    # None means "not given on the command line".
    assert load_config([tmp_path], select=None, no_comments=None).select == ("NM1",)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("select_ = 1\n", ["unknown key 'select_'"]),
        ("no_comments = true\n", ["unknown key 'no_comments'", "did you mean 'no-comments'"]),
        ('jobs = "4"\n', ["jobs must be a positive integer"]),
        ("jobs = 0\n", ["jobs must be a positive integer"]),
        ("jobs = true\n", ["jobs must be a positive integer"]),
        ("cache = 1\n", ["cache must be true or false"]),
        ("select = [1, 2]\n", ["select must be a list of rule ids"]),
        ('from = "gpu"\n', ['from must be "legacy" or "cuda"']),
    ],
)
def test_bad_settings_name_the_file_and_key(tmp_path, body, words):
    path = write_pyproject(tmp_path, "[tool.neuron-migrate]\n" + body)
    with pytest.raises(ConfigError) as info:
        load_config([tmp_path])
    message = str(info.value)
    assert str(path.resolve()) in message
    for word in words:
        assert word in message


def test_invalid_toml_is_a_config_error(tmp_path):
    write_pyproject(tmp_path, "[tool.neuron-migrate\nselect = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config([tmp_path])


def test_from_argument_overrides_the_file_and_is_checked(tmp_path):
    write_pyproject(tmp_path, '[tool.neuron-migrate]\nfrom = "cuda"\n')
    assert load_config([tmp_path]).migrate_from == "cuda"
    assert load_config([tmp_path], migrate_from="legacy").migrate_from == "legacy"
    with pytest.raises(ConfigError, match="from must be one of legacy, cuda"):
        load_config([tmp_path], migrate_from="gpu")


def test_bad_jobs_argument(tmp_path):
    with pytest.raises(ConfigError, match="jobs"):
        load_config([tmp_path], jobs=0)


def test_cache_dir_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("NEURON_MIGRATE_CACHE_DIR", str(tmp_path / "c"))
    assert load_config([tmp_path]).cache_dir == tmp_path / "c"


def test_fingerprint_tracks_only_what_changes_the_output():
    base = Config()
    assert base.fingerprint() == Config().fingerprint()
    assert base.fingerprint() == Config(jobs=8, cache=False, exclude=("x/",)).fingerprint()
    # Order and case of rule selectors do not matter; their content does.
    assert Config(select=("NM1", "nm2")).fingerprint() == Config(select=("NM2", "NM1")).fingerprint()
    assert base.fingerprint() != Config(no_comments=True).fingerprint()
    assert base.fingerprint() != Config(keep_dual_stack=True).fingerprint()
    assert base.fingerprint() != Config(migrate_from="cuda").fingerprint()
    assert base.fingerprint() != Config(select=("NM1",)).fingerprint()
    assert base.fingerprint() != Config(ignore=("NM1",)).fingerprint()


def test_per_file_ignores_add_rules_to_ignore_in_matching_files(tmp_path, monkeypatch):
    from neuron_migrate.migrate.runner import run

    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.neuron-migrate]\nper-file-ignores = {"tests/**" = ["NM110"]}\n')
    legacy = "import torch_xla.core.xla_model as xm\n\nxm.mark_step()\nprint(1)\n"
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text(legacy)
    (tmp_path / "train.py").write_text(legacy)
    config = load_config([tmp_path], cache=False)
    assert config.per_file_ignores == (("tests/**", ("NM110",)),)
    report = run([tmp_path], config, mode="check")
    rules = {fr.path: {f.rule for f in fr.findings if f.applied} for fr in report.files}
    assert "NM110" in rules["train.py"] and "NM110" not in rules["tests/t.py"]


@pytest.mark.parametrize("value", ['"x"', '{"tests/**" = "NM110"}', '{"tests/**" = [1]}'])
def test_per_file_ignores_of_the_wrong_shape_are_a_config_error(tmp_path, value):
    (tmp_path / "pyproject.toml").write_text(f"[tool.neuron-migrate]\nper-file-ignores = {value}\n")
    if value == '{"tests/**" = "NM110"}':  # one id is accepted as a string, as for ignore
        assert load_config([tmp_path]).per_file_ignores == (("tests/**", ("NM110",)),)
        return
    with pytest.raises(ConfigError, match="per-file-ignores must be"):
        load_config([tmp_path])


DUAL_STACK = (
    "import torch\n\n"
    "try:\n"
    "    import torch_xla.core.xla_model as xm\n\n"
    "    DEVICE = xm.xla_device()\n"
    "except ImportError:\n"
    '    DEVICE = torch.device("cpu")\n'
)


@pytest.mark.parametrize("keep", [False, True])
def test_keep_dual_stack_in_pyproject_keeps_the_xla_branch_in_the_run(tmp_path, monkeypatch, keep):
    from neuron_migrate.migrate.runner import run

    monkeypatch.chdir(tmp_path)
    write_pyproject(tmp_path, f"[tool.neuron-migrate]\nkeep-dual-stack = {str(keep).lower()}\ncache = false\n")
    (tmp_path / "dev.py").write_text(DUAL_STACK)
    run([tmp_path], load_config([tmp_path], jobs=1))
    code = (tmp_path / "dev.py").read_text()
    assert 'torch.device("neuron")' in code and "import torch_neuronx" in code
    assert ("import torch_xla.core.xla_model as xm" in code) is keep


def test_the_guide_lists_every_key():
    import re

    from conftest import ROOT
    from neuron_migrate.config import KEYS

    guide = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    block = guide.split("[tool.neuron-migrate]\n", 1)[1].split("```", 1)[0]
    listed = re.findall(r"^([a-z-]+) = ", block, re.MULTILINE)
    assert sorted(listed) == sorted(KEYS)
