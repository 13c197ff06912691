"""Dockerfiles: shell-form RUN and ENV through the shell rules, TODOs for the rest, byte fidelity.

The fixtures under ``fixtures/dockerfile/<ID>/`` are run by ``test_rule_fixtures.py``.
"""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from neuron_migrate.config import load_config
from neuron_migrate.migrate.discover import kind_of
from neuron_migrate.migrate.dockerfile import Dockerfile, rewrite_dockerfile
from neuron_migrate.migrate.runner import run
from neuron_migrate.report.model import CHANGED, FAILED
from neuron_migrate.rules.dockerfiles import legacy_image
from neuron_migrate.rules.launch_scripts import ASYNC_LOAD


def rewrite(text: str, plan, path: str = "Dockerfile"):
    return rewrite_dockerfile(text.encode(), path, plan, False)


@pytest.mark.parametrize(
    "name, kind",
    [
        ("Dockerfile", "dockerfile"), ("Dockerfile.train", "dockerfile"), ("train.Dockerfile", "dockerfile"),
        ("Containerfile", "dockerfile"), ("dockerfile", "dockerfile"), ("docker-compose.yml", None),
        ("Dockerfile.py", "python"), ("notes.dockerfile.md", None),
    ],
)  # fmt: skip
def test_dockerfiles_are_found_by_name(name, kind):
    assert kind_of(name) == kind


def test_the_view_keeps_every_position():
    text = (FIXTURES / "dockerfile" / "NM521" / "training.before.Dockerfile").read_text()
    view = Dockerfile.parse(text).view
    assert len(view) == len(text)
    assert [i for i, c in enumerate(view) if c == "\n"] == [i for i, c in enumerate(text) if c == "\n"]
    # A shell-form RUN keeps its command, a continued comment line keeps the command going.
    assert "    pip install --extra-index-url" in view and "\n                       \\\n" in view


def test_an_inserted_export_becomes_an_env_instruction(plan):
    text = "FROM base\nRUN torchrun --nproc_per_node 2 train.py --output_dir out --learning_rate 1e-4\n"
    outcome = rewrite(text, plan)
    assert outcome.output.decode() == f"FROM base\nENV {ASYNC_LOAD}=1\n" + text.split("\n", 1)[1]


def test_a_deleted_env_keeps_the_other_assignments(plan):
    text = "FROM base\nENV PJRT_DEVICE=NEURON \\\n    HF_HOME=/cache\n"
    assert rewrite(text, plan).output.decode() == "FROM base\nENV HF_HOME=/cache\n"
    text = "FROM base\nENV PJRT_DEVICE=NEURON\nRUN --mount=type=cache,target=/c pip install libneuronxla\n"
    assert rewrite(text, plan).output.decode() == "FROM base\n"


def test_crlf_and_bom_survive(plan):
    text = "FROM base\r\nENV PJRT_DEVICE=NEURON\r\nRUN pip install torch-xla\r\n"
    outcome = rewrite_dockerfile(("\ufeff" + text).encode(), "Dockerfile", plan, False)
    assert outcome.output.decode() == "\ufeffFROM base\r\nRUN pip install 'torch>=2.13'\r\n"


def test_bad_input_is_reported_and_left_untouched(plan, monkeypatch):
    escape = rewrite("# escape=`\nFROM base\nENV PJRT_DEVICE=NEURON\n", plan)
    assert escape.status == FAILED and "escape" in escape.error and escape.output is None
    broken = rewrite_dockerfile(b"FROM base\nENV X=\xff\n", "Dockerfile", plan, False)
    assert broken.status == FAILED and broken.error.startswith("2:")

    def explode(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("neuron_migrate.rules.dockerfiles.dispatch._check_image", explode)
    failed = rewrite("FROM base\nENV PJRT_DEVICE=NEURON\n", plan)
    assert failed.status == FAILED and "internal error" in failed.error


@pytest.mark.parametrize(
    "image, legacy",
    [
        ("public.ecr.aws/neuron/pytorch-training-neuronx:2.1.2-neuronx-py310-sdk2.20.0-ubuntu20.04", "PyTorch 2.1"),
        ("763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference-neuronx:1.13.1-neuronx-py310", "PyTorch 1.13"),
        ("huggingface/optimum-neuron:latest", "optimum-neuron"),
        ("public.ecr.aws/neuron/pytorch-training-neuronx:2.14.0-neuronx-py312-sdk2.33.0", None),
        ("pytorch/pytorch:2.1.2-cuda12.1-cudnn8-runtime", None),
        ("localhost:5000/neuron-base", None),
    ],
)
def test_legacy_images(image, legacy):
    assert legacy_image(image) == legacy


def test_the_pipeline_rewrites_dockerfiles_next_to_the_code(tmp_path):
    (tmp_path / "Dockerfile").write_text("FROM base\nENV PJRT_DEVICE=NEURON\n")
    (tmp_path / "train.py").write_text("import torch\n")
    report = run([tmp_path], load_config([tmp_path], jobs=1), mode="write")
    assert report.count(CHANGED) == 1
    assert (tmp_path / "Dockerfile").read_text() == "FROM base\n"


def test_an_ignore_comment_above_an_instruction_applies_to_all_of_it(plan):
    text = (
        "FROM base\n"
        "# neuron-migrate: ignore[NM501]\n"
        "ENV PJRT_DEVICE=NEURON \\\n"
        "    XLA_FLAGS=--xla_dump_to=/tmp/d\n"
        "# neuron-migrate: ignore\n"
        "ARG XLA_USE_BF16=1\n"
        "ENV PJRT_DEVICE=NEURON\n"
    )
    outcome = rewrite(text, plan)
    assert outcome.output.decode() == text.removesuffix("ENV PJRT_DEVICE=NEURON\n")
    assert sorted((f.rule, f.span.line, f.suppressed) for f in outcome.findings) == [
        ("NM501", 3, True), ("NM501", 4, True), ("NM501", 7, False), ("NM520", 6, True),
    ]  # fmt: skip


def test_a_heredoc_script_is_shell_and_keeps_its_own_syntax(plan):
    text = (
        "FROM base\n"
        "RUN <<EOF\n"
        "export PJRT_DEVICE=NEURON\n"
        "torchrun --nproc_per_node 2 train.py --output_dir out --learning_rate 1e-4\n"
        "EOF\n"
        "RUN <<EOF python3\n"
        "import torch_xla\n"
        "EOF\n"
    )
    new = rewrite(text, plan).output.decode()
    # Inside the script an added variable stays an `export` line, not an ENV instruction.
    assert new.startswith(f"FROM base\nRUN <<EOF\nexport {ASYNC_LOAD}=1\ntorchrun --nproc_per_node 2 train.py")
    assert "PJRT_DEVICE" not in new
    # A heredoc run by another interpreter is not shell: it gets a TODO and stays as written.
    assert "# TODO(neuron-migrate NM520): this RUN instruction names torch_xla" in new
    assert new.endswith("RUN <<EOF python3\nimport torch_xla\nEOF\n")


def test_the_old_env_form_is_migrated_when_its_value_is_one_word(plan):
    text = (
        "FROM base\n"
        "ENV PJRT_DEVICE NEURON\n"
        "ENV NEURON_COMPILE_CACHE_URL /cache\n"
        "ENV NEURON_CC_FLAGS --cache_dir=/c\n"
        "ENV XLA_FLAGS --xla_dump_to=/tmp/d --xla_dump_hlo_as_text\n"
    )
    lines = rewrite(text, plan).output.decode().splitlines()
    assert "ENV PJRT_DEVICE NEURON" not in lines
    assert "ENV TORCH_NEURONX_NEFF_CACHE_DIR /cache" in lines
    # An old-form ENV needs a value: an emptied one is written "".
    assert 'ENV NEURON_CC_FLAGS ""' in lines
    # A value with blanks is not one shell word: reported, left as written.
    assert lines[-1] == "ENV XLA_FLAGS --xla_dump_to=/tmp/d --xla_dump_hlo_as_text"
    assert lines[-2].startswith("# TODO(neuron-migrate NM520): this ENV instruction names XLA_FLAGS")
