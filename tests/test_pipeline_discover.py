"""Which files a run visits: folders walked, tool folders and environments skipped, .gitignore and
excludes honoured, symlinks handled without loops or surprises."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from neuron_migrate.config import Config
from neuron_migrate.migrate.discover import discover

needs_symlinks = pytest.mark.skipif(not hasattr(os, "symlink") or os.name == "nt", reason="POSIX symlinks")


def touch(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")


def found(tmp_path: Path, paths=None, **config) -> list[str]:
    result = discover(paths or [tmp_path], Config(root=tmp_path, **config))
    return [p.path.relative_to(tmp_path).as_posix() for p in result.files]


def test_python_files_sorted_and_unique(tmp_path):
    touch(tmp_path, "b.py", "a.py", "pkg/c.py", "notes.txt", "pkg/data.json")
    assert found(tmp_path) == ["a.py", "b.py", "pkg/c.py"]
    # The same file reached twice (folder and file) is processed once.
    assert found(tmp_path, [tmp_path, tmp_path / "a.py", tmp_path / "pkg"]) == ["a.py", "b.py", "pkg/c.py"]


def test_tool_folders_and_environments_are_skipped(tmp_path):
    touch(
        tmp_path,
        "train.py",
        ".git/hooks/x.py",
        "__pycache__/m.py",
        "node_modules/pkg/m.py",
        ".tox/py311/m.py",
        ".nox/s/m.py",
        ".venv/lib/m.py",
        "lib/python3.11/site-packages/torch_xla/m.py",
        "env/lib/m.py",
        "env/pyvenv.cfg",
        "conda/conda-meta/m.py",
        "conda/lib/m.py",
    )
    assert found(tmp_path) == ["train.py"]


def test_gitignore_root_nested_and_negation(tmp_path):
    touch(tmp_path, "keep.py", "build/gen.py", "out.gen.py", "pkg/a.py", "pkg/tmp/b.py", "pkg/local.py", "pkg/c.py")
    (tmp_path / ".gitignore").write_text("# generated\nbuild/\n*.gen.py\n")
    (tmp_path / "pkg" / ".gitignore").write_text("tmp/\n*.py\n!a.py\n!c.py\n")
    assert found(tmp_path) == ["keep.py", "pkg/a.py", "pkg/c.py"]


def test_gitignore_above_the_given_folder_applies_inside_a_repository(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("generated/\n")
    touch(tmp_path, "src/generated/x.py", "src/y.py")
    result = discover([tmp_path / "src"], Config(root=tmp_path))
    assert [p.path.name for p in result.files] == ["y.py"]


def test_an_explicit_gitignored_file_is_processed(tmp_path):
    touch(tmp_path, "build/gen.py")
    (tmp_path / ".gitignore").write_text("build/\n")
    assert found(tmp_path) == []
    assert found(tmp_path, [tmp_path / "build" / "gen.py"]) == ["build/gen.py"]


def test_an_explicit_gitignored_folder_is_processed(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("build/\n*.gen.py\n")
    touch(tmp_path, "build/lib/gen.py", "build/lib/x.gen.py", "src/a.py", "src/b.gen.py")
    result = discover([tmp_path / "build" / "lib"], Config(root=tmp_path))
    assert [p.path.name for p in result.files] == ["gen.py", "x.gen.py"]
    # Inside a folder that is not ignored itself, the repository's patterns still apply.
    result = discover([tmp_path / "src"], Config(root=tmp_path))
    assert [p.path.name for p in result.files] == ["a.py"]


def test_config_excludes_apply_to_walks_and_explicit_files(tmp_path):
    touch(tmp_path, "a.py", "legacy/old.py", "proto/x_pb2.py", "deep/legacy/z.py")
    config = {"exclude": ("legacy/",), "extend_exclude": ("*_pb2.py",)}
    assert found(tmp_path, **config) == ["a.py"]
    result = discover([tmp_path / "legacy" / "old.py"], Config(root=tmp_path, **config))
    assert result.files == []
    assert [s.reason for s in result.skipped] == ["excluded by the configuration"]
    # Anchored patterns only match from the project root.
    assert found(tmp_path, exclude=("/legacy/",)) == ["a.py", "deep/legacy/z.py", "proto/x_pb2.py"]


def test_missing_path_is_an_error(tmp_path):
    result = discover([tmp_path / "nope.py"], Config(root=tmp_path))
    assert result.files == [] and [e.reason for e in result.errors] == ["no such file or folder"]


def test_explicit_non_python_file_is_skipped_with_a_reason(tmp_path):
    touch(tmp_path, "run.ps1")
    result = discover([tmp_path / "run.ps1"], Config(root=tmp_path))
    assert result.files == [] and "not a file type" in result.skipped[0].reason


def test_shell_scripts_are_found_as_their_own_kind(tmp_path):
    touch(tmp_path, "run.sh")
    touch(tmp_path, "scripts/train.bash")
    result = discover([tmp_path], Config(root=tmp_path))
    assert sorted((f.path.name, f.kind) for f in result.files) == [("run.sh", "shell"), ("train.bash", "shell")]


def test_files_included_by_requirement_files_are_followed(tmp_path):
    (tmp_path / "deps").mkdir()
    (tmp_path / "requirements.txt").write_text("-r deps/common.txt\n--constraint=pins.lst\n-r https://x/y.txt\ntorch\n")
    (tmp_path / "deps" / "common.txt").write_text("-r ../more.txt\n-r missing.txt\n")
    (tmp_path / "more.txt").write_text("-r ../outside.txt\n")
    (tmp_path / "pins.lst").write_text("torch-xla\n")
    (tmp_path / "vendor.txt").write_text("not included by anything\n")
    (tmp_path.parent / "outside.txt").write_text("torch-xla\n")
    result = discover([tmp_path], Config(root=tmp_path))
    kinds = {f.real.relative_to(tmp_path).as_posix(): f.kind for f in result.files}
    # Followed from file to file, never outside the folder being migrated, never twice.
    assert kinds == {
        "requirements.txt": "requirements",
        "deps/common.txt": "requirements",
        "more.txt": "requirements",
        "pins.lst": "requirements",
    }
    assert found(tmp_path, exclude=("pins.lst",)) == ["deps/common.txt", "more.txt", "requirements.txt"]


@needs_symlinks
def test_symlinked_folder_loop_does_not_hang(tmp_path):
    touch(tmp_path, "pkg/a.py")
    os.symlink(tmp_path, tmp_path / "pkg" / "loop")
    os.symlink(tmp_path / "pkg", tmp_path / "pkg" / "self")
    assert found(tmp_path) == ["pkg/a.py"]


@needs_symlinks
def test_symlinked_file_loop_and_broken_link_are_skipped(tmp_path):
    os.symlink(tmp_path / "b.py", tmp_path / "a.py")
    os.symlink(tmp_path / "a.py", tmp_path / "b.py")
    os.symlink(tmp_path / "missing.py", tmp_path / "broken.py")
    result = discover([tmp_path], Config(root=tmp_path))
    assert result.files == []
    assert sorted(s.path.name for s in result.skipped) == ["a.py", "b.py", "broken.py"]


@needs_symlinks
def test_symlink_to_a_file_inside_the_tree_is_one_file(tmp_path):
    touch(tmp_path, "real/model.py")
    os.symlink(tmp_path / "real" / "model.py", tmp_path / "alias.py")
    result = discover([tmp_path], Config(root=tmp_path))
    # The plain path wins over the link to it.
    assert [f.path.relative_to(tmp_path).as_posix() for f in result.files] == ["real/model.py"]


@needs_symlinks
def test_symlink_whose_target_is_hidden_from_the_walk_goes_through_the_link(tmp_path):
    touch(tmp_path, "src/.hidden_ignored/model.py")
    (tmp_path / ".gitignore").write_text(".hidden_ignored/\n")
    os.symlink(tmp_path / "src" / ".hidden_ignored" / "model.py", tmp_path / "src" / "model.py")
    result = discover([tmp_path], Config(root=tmp_path))
    [source] = result.files
    assert source.path == tmp_path / "src" / "model.py"
    assert source.real == (tmp_path / "src" / ".hidden_ignored" / "model.py").resolve()


@needs_symlinks
def test_symlink_to_a_file_outside_the_tree_is_skipped(tmp_path):
    outside = tmp_path / "outside"
    touch(outside, "shared.py")
    tree = tmp_path / "tree"
    touch(tree, "a.py")
    os.symlink(outside / "shared.py", tree / "shared.py")
    result = discover([tree], Config(root=tree))
    assert [f.path.name for f in result.files] == ["a.py"]
    [skipped] = result.skipped
    assert skipped.path == tree / "shared.py" and "outside the tree" in skipped.reason


def test_the_audit_walks_the_tree_once(tmp_path, monkeypatch):
    from neuron_migrate import audit
    from neuron_migrate.config import load_config
    from neuron_migrate.migrate import runner

    (tmp_path / "train.py").write_text("import torch_xla.core.xla_model as xm\nxm.mark_step()\n")
    walks = []

    def counted(paths, config):
        walks.append(paths)
        return discover(paths, config)

    monkeypatch.setattr(audit, "discover", counted)
    monkeypatch.setattr(runner, "discover", counted)
    report = audit.audit([tmp_path], load_config([tmp_path], cache=False))
    assert len(walks) == 1
    assert any(f.rule == "NM110" for result in report.files for f in result.findings), "the legacy pass still ran"
