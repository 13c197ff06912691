"""The torch-neuronx and neuronx_distributed rules (NM401-NM449) beyond their fixtures.

A script that traced a model with ``torch_neuronx.trace`` is migrated and run on the emulated neuron
device: the rewritten ``torch.compile(..., backend="neuron")`` must compile through the neuron
backend and give what the model gives on the CPU. For NxD files, the one summary finding per file
must name the APIs the file uses, and no NxD use may be left without its own next step.
"""

from __future__ import annotations

import pytest
from conftest import FIXTURES

TRACE_SCRIPT = '''
import torch
import torch_neuronx
from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 3))

    def forward(self, x):
        return torch.softmax(self.body(x), dim=-1)


def build(example):
    model = Classifier()
    traced = torch_neuronx.trace(model, example, compiler_args=["--auto-cast", "none"])
    return traced
'''

NXD_FIXTURE = FIXTURES / "rules" / "NM420" / "tp_mlp_training.before.py"


@pytest.fixture(scope="module")
def migrated_trace(plan):
    from neuron_migrate.migrate.engine import migrate_python

    return migrate_python(TRACE_SCRIPT, "serve.py", plan)


def test_trace_becomes_a_compiled_model_on_the_neuron_device(migrated_trace):
    code = migrated_trace.code
    assert 'traced = torch.compile(model.to("neuron").eval(), backend="neuron", fullgraph=True)' in code
    assert "torch_neuronx.trace" not in code
    marker = next(line for line in code.splitlines() if "neuron-migrate(NM401)" in line)
    assert "(`example`) static" in marker and 'NEURON_CC_FLAGS="--auto-cast none"' in marker
    (finding,) = [f for f in migrated_trace.findings if f.rule == "NM401"]
    assert finding.applied and finding.safety == "review"


def test_migrated_trace_script_runs_on_the_emulated_device(migrated_trace, neuron_emulator):
    import torch

    from neuron_migrate.analyzers.emulator import compiled_graphs

    namespace: dict = {"__name__": "serve"}
    exec(compile(migrated_trace.code, "serve.py", "exec"), namespace)
    example = torch.randn(4, 8, generator=torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    expected = namespace["Classifier"]()(example)

    torch.manual_seed(0)
    compiled = namespace["build"](example)
    graphs_before = len(compiled_graphs())
    # What the review marker asks for: the inputs move to the device.
    out = compiled(example.to("neuron"))
    assert out.device.type == "neuron"
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-5, atol=1e-6)
    assert len(compiled_graphs()) == graphs_before + 1, "the neuron compile backend never saw the model"
    # eval() came with the rewrite (the traced model ran in inference mode too)
    assert not compiled.training

    compiled(example.to("neuron"))
    assert len(compiled_graphs()) == graphs_before + 1, "the same shape compiled twice"
    compiled(torch.randn(2, 8).to("neuron"))
    assert len(compiled_graphs()) == graphs_before + 2, "a new shape must compile again, as the marker says"


def test_saving_the_traced_model_is_left_to_a_human(migrate):
    source = TRACE_SCRIPT + '\n\ntorch.jit.save(build(torch.ones(1, 8)), "classifier_neuron.pt")\n'
    source += 'restored = torch.jit.load("classifier_neuron.pt")\n'
    result = migrate(source)
    todos = [line for line in result.code.splitlines() if "TODO(neuron-migrate NM402)" in line]
    # TorchScript saved by a torch_neuronx script is what `build` traced; the load says where it read that
    assert len(todos) == 2
    assert "this saved the traced model" in todos[0] and "TORCH_NEURONX_NEFF_CACHE_DIR" in todos[0]
    assert "(this file saves a traced model as `classifier_neuron.pt`)" in todos[1]


# ----- a traced model saved by one script and loaded by another -----------------------------------

COMPILE_SCRIPT = """import os

import torch
import torch_neuronx

model = build_model().eval()
traced = torch_neuronx.trace(model, torch.zeros(1, 128, dtype=torch.long))
filename = os.path.join("compiled", "classifier.pt")
torch.jit.save(traced, filename)
"""
SERVE_SCRIPT = """import torch

MODEL = torch.jit.load("compiled/classifier.pt")
STATS = torch.load("compiled/label_stats.pt")
"""
NOTEBOOK_CELLS = [
    "import torch\nimport torch_neuronx\n",
    "model_neuron = torch_neuronx.trace(model, example)\n",
    "model_neuron.save('bert_compiled.pt')\n",
    "!tar -czvf model.tar.gz bert_compiled.pt\n",
]
INFERENCE_SCRIPT = """import os

import torch


def model_fn(model_dir):
    return torch.jit.load(os.path.join(model_dir, "bert_compiled.pt"))
"""


def _notebook(cells: list[str]) -> str:
    import json

    code = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": c} for c in cells]
    return json.dumps({"cells": code, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


@pytest.fixture
def inference_project(tmp_path, monkeypatch):
    """A compile script and a serving script side by side; a SageMaker notebook with its ``code/`` folder."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "compile.py").write_text(COMPILE_SCRIPT)
    (tmp_path / "app" / "serve.py").write_text(SERVE_SCRIPT)
    (tmp_path / "sagemaker" / "code").mkdir(parents=True)
    (tmp_path / "sagemaker" / "deploy.ipynb").write_text(_notebook(NOTEBOOK_CELLS))
    (tmp_path / "sagemaker" / "code" / "inference.py").write_text(INFERENCE_SCRIPT)
    return tmp_path


def _rewrite(project):
    from neuron_migrate.config import load_config
    from neuron_migrate.migrate import runner

    return runner.run([project], load_config([project], jobs=1), mode="write")


def _todos(path, rule="NM402") -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if f"TODO(neuron-migrate {rule})" in line]


def test_a_script_loading_what_its_neighbour_traced_is_marked_with_the_reason(inference_project):
    _rewrite(inference_project)
    (load,) = _todos(inference_project / "app" / "serve.py")
    assert "(`compile.py` saves a traced model as `classifier.pt`)" in load
    assert 'torch.compile it at start-up' in load
    # the other file it loads was never traced: no marker
    assert 'STATS = torch.load("compiled/label_stats.pt")' in (inference_project / "app" / "serve.py").read_text()
    (save,) = _todos(inference_project / "app" / "compile.py")
    assert "`torch.save(model.state_dict(), path)`" in save


def test_a_sagemaker_entry_point_loading_what_its_notebook_traced_is_marked(inference_project):
    _rewrite(inference_project)
    (load,) = _todos(inference_project / "sagemaker" / "code" / "inference.py")
    assert "(`../deploy.ipynb` saves a traced model as `bert_compiled.pt`)" in load
    notebook = (inference_project / "sagemaker" / "deploy.ipynb").read_text()
    assert "TODO(neuron-migrate NM402): this saved the traced model" in notebook


def test_a_project_of_traced_artifacts_converges(inference_project):
    first = _rewrite(inference_project)
    assert {f.path for f in first.files if f.status == "changed"} >= {"app/serve.py", "sagemaker/code/inference.py"}
    second = _rewrite(inference_project)
    assert [f.path for f in second.files if f.status == "changed"] == []


def test_a_loader_without_a_neighbour_that_traced_its_file_is_left_alone(inference_project):
    (inference_project / "app" / "compile.py").write_text(COMPILE_SCRIPT.replace("classifier.pt", "other.pt"))
    _rewrite(inference_project)
    assert _todos(inference_project / "app" / "serve.py") == []


def test_suppression_comment_keeps_the_trace_call(migrate):
    source = (
        "import torch_neuronx\n\n"
        "traced = torch_neuronx.trace(model, example)  # neuron-migrate: ignore[NM401]\n"
    )
    result = migrate(source)
    assert "torch_neuronx.trace(model, example)" in result.code
    assert "neuron-migrate(NM401)" not in result.code


def test_plain_torch_neuronx_is_not_legacy(migrate):
    source = "import torch\nimport torch_neuronx\n\nprint(torch_neuronx.get_fallback_ops())\n"
    result = migrate(source)
    assert result.code == source and not result.findings


# ----- neuronx_distributed ------------------------------------------------------------------------


def test_summary_lists_the_apis_of_the_file_once(migrate):
    result = migrate(NXD_FIXTURE.read_text(encoding="utf-8"), path=NXD_FIXTURE.name)
    (summary,) = [f for f in result.findings if f.rule == "NM420"]
    for api in (
        "ParallelEmbedding",
        "ColumnParallelLinear",
        "RowParallelLinear",
        "initialize_model_parallel",
        "get_tensor_model_parallel_rank",
        "get_data_parallel_size",
        "parallel_cross_entropy",
        "save_checkpoint",
    ):
        assert api in summary.message
    # rewritten automatically, so not part of the work left
    assert "move_model_to_device" not in summary.message
    # the plan, in order
    steps = ["DeviceMesh", "parallelize_module", "loss_parallel", "FSDP2", "DCP", "torchrun"]
    positions = [summary.message.index(step) for step in steps]
    assert positions == sorted(positions)
    assert "fully_shard" in summary.fix and "init_device_mesh" in summary.fix
    # on the import the first hand-migrated name comes from
    line = result.code.splitlines().index(next(l for l in result.code.splitlines() if "NM420" in l))
    assert result.code.splitlines()[line + 1].startswith("from neuronx_distributed.parallel_layers import (")


def test_every_nxd_use_has_its_own_next_step():
    # A before case's findings snapshot is what every rule reports on it (test_rule_fixtures.py checks that).
    snapshots = [p for p in sorted((FIXTURES / "rules").glob("NM4*/*.findings")) if not p.name.endswith(".noop.findings")]
    assert snapshots
    for snapshot in snapshots:
        leftovers = [line for line in snapshot.read_text(encoding="utf-8").splitlines() if line.startswith("NM100 ")]
        assert not leftovers, f"{snapshot.parent.name}/{snapshot.name}: {leftovers[0]}"


def test_summary_only_in_the_report_without_comments(migrate):
    source = "from neuronx_distributed.pipeline import NxDPPModel\n\nmodel = NxDPPModel(model, num_microbatches=4)\n"
    result = migrate(source, no_comments=True)
    assert result.code == source
    assert {f.rule for f in result.findings} == {"NM420", "NM427"}


def test_no_summary_when_every_use_was_rewritten(migrate):
    source = (
        "import torch\n"
        "from neuronx_distributed.parallel_layers import move_model_to_device\n\n"
        'move_model_to_device(model, torch.device("neuron"))\n'
    )
    result = migrate(source)
    assert "neuronx_distributed" not in result.code
    assert "NM420" not in {f.rule for f in result.findings}


@pytest.mark.parametrize(
    ("qname", "rule_id"),
    [
        ("neuronx_distributed.parallel_layers.ColumnParallelLinear", "NM422"),
        ("neuronx_distributed.parallel_layers.layers.ColumnParallelLinear.forward", "NM422"),
        ("neuronx_distributed.parallel_state.get_tensor_model_parallel_rank", "NM421"),
        ("neuronx_distributed.parallel_layers.parallel_state.get_expert_model_parallel_size", "NM421"),
        ("neuronx_distributed.parallel_layers.save", "NM426"),
        ("neuronx_distributed.trace.model_builder.ModelBuilder.save", "NM431"),
        ("neuronx_distributed.modules.lora.LoraConfig", "NM430"),
        ("neuronx_distributed.modules.lora.model.LoraModel", "NM430"),
        ("neuronx_distributed.utils.logger.get_logger", "NM449"),
    ],
)
def test_nxd_names_are_matched_whatever_the_import_path(qname, rule_id):
    from neuron_migrate.rules.neuronx_distributed import owner

    assert owner(qname)[0].meta.id == rule_id


def test_every_nxd_row_answers_its_name_under_any_module_path():
    from neuron_migrate.rules.neuronx_distributed import owner
    from neuron_migrate.rules.tables.neuronx_distributed import NXD, ROWS

    for row in ROWS:
        name = row.name.removeprefix(f"{NXD}.**.")
        # a module row answers the names of the module that nothing else answers by name
        used = name.replace(".*", ".some_helper")
        for qname in (f"{NXD}.{used}", f"{NXD}.a.b.{used}"):
            rule, answer, _ = owner(qname)
            assert (rule.meta.id, answer) == (row.rule, row), qname
            assert row.covers(qname)


def test_an_nxd_name_two_rules_answer_is_refused():
    from neuron_migrate.rules.base import MANUAL, RuleMeta
    from neuron_migrate.rules.neuronx_distributed.common import answer_tables
    from neuron_migrate.rules.rows import Manual, Row

    class ByCode:
        meta = RuleMeta("NM997", "by code", safety=MANUAL)
        apis, modules, rows = {"divide": "divide"}, {}, ()

    class ByRow:
        meta = RuleMeta("NM998", "by row", safety=MANUAL)
        apis, modules = {}, {}
        rows = (Row("neuronx_distributed.**.divide", "NM998", Manual("use a // b")),)

    with pytest.raises(ValueError, match="divide is answered by both NM997 and NM998"):
        answer_tables([ByCode, ByRow])


def test_files_beyond_the_repository_root_are_not_read(inference_project):
    # A repository whose serve.py sits at its root: the compile script of another project next to
    # it says nothing about what this one loads.
    repo = inference_project / "repo"
    (repo / ".git").mkdir(parents=True)
    (inference_project / "compile.py").write_text(COMPILE_SCRIPT.replace('"compiled", ', ""))
    (repo / "serve.py").write_text(SERVE_SCRIPT.replace("compiled/", ""))
    _rewrite(repo)
    assert _todos(repo / "serve.py") == []
