"""The pre-commit hooks, driven by the real ``pre-commit try-repo`` on a throwaway git repository.

pre-commit installs a hook repository at a commit, so the test first snapshots this checkout's
working tree (committed or not) into a one-commit repository and points ``try-repo`` at that. The
hook's virtualenv installs this package and its dependencies with pip, which takes a minute.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT
from neuron_migrate.migrate.discover import kind_of
from neuron_migrate.rules.base import get_rule

pytestmark = pytest.mark.slow

EXAMPLE = get_rule("NM110").meta.example
# What pip needs to build and install the package from the snapshot.
PACKAGE_FILES = ("pyproject.toml", "README.md", "LICENSE", "setup.py", "setup.cfg", "MANIFEST.in", ".pre-commit-hooks.yaml")


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"`{tool}` is not installed; the pre-commit hook test needs git and pre-commit")
    return path


def _git_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="test",
        GIT_AUTHOR_EMAIL="test@example.com",
        GIT_COMMITTER_NAME="test",
        GIT_COMMITTER_EMAIL="test@example.com",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        PRE_COMMIT_HOME=str(home),
        PRE_COMMIT_COLOR="never",
    )
    return env


def _git(cwd: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def test_hooks_file_declares_the_hooks():
    yaml = pytest.importorskip("yaml")
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"neuron-migrate", "neuron-migrate-check", "neuron-migrate-audit"}
    assert hooks["neuron-migrate"]["entry"] == "neuron-migrate rewrite"
    assert hooks["neuron-migrate-check"]["entry"] == "neuron-migrate rewrite --check"
    assert hooks["neuron-migrate-audit"]["entry"].startswith("neuron-migrate audit")
    for hook in hooks.values():
        assert hook["language"] == "python"


@pytest.mark.parametrize(
    "name",
    [
        "train.py", "nb.ipynb", "run.sh", "launch.bash", "requirements.txt", "requirements-dev.txt",
        "dev-requirements.in", "constraints.txt", "requirements/base.txt", "pkg/pyproject.toml", "setup.cfg",
        "environment.yml", "environment.yaml", "notes.txt", "README.md", "config.yaml", "run.ps1", "data.json",
        "Dockerfile", "docker/Dockerfile.train", "serve.dockerfile", "Containerfile", "docker-compose.yml",
        "TRAIN.PY",
    ],
)  # fmt: skip
def test_hooks_take_exactly_the_files_neuron_migrate_reads(name):
    yaml = pytest.importorskip("yaml")
    for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text()):
        assert bool(re.search(hook["files"], name)) == (kind_of(name) is not None), (hook["id"], name)


@pytest.fixture(scope="module")
def hook_env(tmp_path_factory):
    """(hook repository snapshot, environment for git and pre-commit)."""
    _need("git")
    _need("pre-commit")
    env = _git_env(tmp_path_factory.mktemp("pre-commit-home"))
    snapshot = tmp_path_factory.mktemp("hook-repo")
    for name in PACKAGE_FILES:
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, snapshot / name)
    shutil.copytree(ROOT / "neuron_migrate", snapshot / "neuron_migrate", ignore=shutil.ignore_patterns("__pycache__"))
    _git(snapshot, env, "init", "-q")
    _git(snapshot, env, "add", "-A")
    _git(snapshot, env, "commit", "-q", "-m", "snapshot")
    return snapshot, env


@pytest.fixture
def user_repo(tmp_path, hook_env):
    _, env = hook_env
    repo = tmp_path / "user"
    repo.mkdir()
    _git(repo, env, "init", "-q")
    (repo / "train.py").write_text(EXAMPLE.before, encoding="utf-8")
    _git(repo, env, "add", "train.py")
    return repo


def _try_repo(repo: Path, hook_env, hook: str, files=("train.py",)) -> subprocess.CompletedProcess:
    snapshot, env = hook_env
    return subprocess.run(
        ["pre-commit", "try-repo", str(snapshot), hook, "--files", *files],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_rewrite_hook_fails_then_passes(user_repo, hook_env):
    first = _try_repo(user_repo, hook_env, "neuron-migrate")
    assert first.returncode == 1, first.stdout + first.stderr
    assert "Failed" in first.stdout
    assert (user_repo / "train.py").read_text(encoding="utf-8") == EXAMPLE.after

    second = _try_repo(user_repo, hook_env, "neuron-migrate")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "Passed" in second.stdout


def test_check_hook_fails_and_writes_nothing(user_repo, hook_env):
    result = _try_repo(user_repo, hook_env, "neuron-migrate-check")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "NM110" in result.stdout
    assert (user_repo / "train.py").read_text(encoding="utf-8") == EXAMPLE.before


def test_audit_hook_fails_on_a_hazard_and_passes_once_fixed(user_repo, hook_env):
    (user_repo / "train.py").write_text("import torch\n\nmodel = torch.compile(torch.nn.Linear(2, 2), dynamic=True)\n")
    _git(user_repo, hook_env[1], "add", "train.py")
    failing = _try_repo(user_repo, hook_env, "neuron-migrate-audit")
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "NA104" in failing.stdout

    (user_repo / "train.py").write_text(
        "import torch\n\ntorch._dynamo.config.automatic_dynamic_shapes = False\n"
        "model = torch.compile(torch.nn.Linear(2, 2))\n"
    )
    passing = _try_repo(user_repo, hook_env, "neuron-migrate-audit")
    assert passing.returncode == 0, passing.stdout + passing.stderr


def test_rewrite_hook_migrates_launch_scripts_and_requirements(user_repo, hook_env):
    (user_repo / "requirements.txt").write_text("torch-xla==2.1.2\ndatasets\n")
    (user_repo / "run.sh").write_text("#!/bin/bash\nexport PJRT_DEVICE=NEURON\ntorchrun train.py\n")
    _git(user_repo, hook_env[1], "add", "requirements.txt", "run.sh")
    result = _try_repo(user_repo, hook_env, "neuron-migrate", files=("requirements.txt", "run.sh"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert (user_repo / "requirements.txt").read_text() == "torch>=2.13\ndatasets\n"
    assert (user_repo / "run.sh").read_text() == "#!/bin/bash\ntorchrun train.py\n"
