"""Which files a verified program is made of: the edits that may explain a divergence come from those only."""

from __future__ import annotations

from pathlib import Path

from neuron_migrate.verify.program import belongs, program_files


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_script_is_its_own_modules_not_its_siblings(tmp_path):
    _write(tmp_path, {
        "kto.py": "import helpers\nfrom pkg import model\nfrom pkg.data import load\n",
        "bco.py": "import torch\n",
        "helpers.py": "from . import nothing\nimport json\n",
        "pkg/__init__.py": "",
        "pkg/model.py": "from .layers import Block\n",
        "pkg/layers.py": "",
        "pkg/data.py": "",
        "pkg/unused.py": "",
        "run.sh": "torchrun kto.py\n",
    })
    files = program_files(tmp_path / "kto.py", tmp_path)
    names = sorted(str(path.relative_to(tmp_path)) for path in files)
    assert names == ["helpers.py", "kto.py", "pkg/__init__.py", "pkg/data.py", "pkg/layers.py", "pkg/model.py"]
    assert not belongs(tmp_path / "bco.py", files)
    assert not belongs(tmp_path / "pkg" / "unused.py", files)
    assert belongs(tmp_path / "run.sh", files)  # a launcher sets up how the program runs


def test_a_script_that_does_not_parse_is_still_its_own_program(tmp_path):
    _write(tmp_path, {"train.py": "def broken(:\n", "other.py": ""})
    assert program_files(tmp_path / "train.py", tmp_path) == {(tmp_path / "train.py").resolve()}


def test_imports_outside_the_folder_are_not_followed(tmp_path):
    _write(tmp_path, {"app/train.py": "from .. import shared\nimport os\n", "shared.py": ""})
    files = program_files(tmp_path / "app" / "train.py", tmp_path / "app")
    assert files == {(tmp_path / "app" / "train.py").resolve()}


def test_the_edits_that_explain_a_divergence_are_the_scripts_own(tmp_path):
    from neuron_migrate.verify.runner import edits

    legacy, migrated = tmp_path / "legacy", tmp_path / "migrated"
    for folder in (legacy, migrated):
        _write(folder, {"a.py": "import torch\nx = torch.zeros(1).cuda()\n",
                        "b.py": "import torch\ntorch.backends.cudnn.benchmark = True\n"})
    found = edits(legacy, migrated, "cuda", scripts=(legacy / "a.py", migrated / "a.py"))
    assert {Path(edit.path).name for edit in found} == {"a.py"}
    assert {Path(edit.path).name for edit in edits(legacy, migrated, "cuda")} == {"a.py", "b.py"}
