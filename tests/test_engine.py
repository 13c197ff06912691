"""Engine promises that are not about one rule: shims, f-strings, import edits, deleted lines."""

from __future__ import annotations

import ast


def test_a_name_bound_by_a_shim_and_by_a_plain_import_is_migrated(migrate):
    source = (
        "try:\n"
        "    import torch_xla.core.xla_model as xm\n"
        "except ImportError:\n"
        "    xm = None\n"
        "xm.mark_step()\n"
        "import torch_xla.core.xla_model as xm\n"
    )
    code = migrate(source).code
    assert "xm.mark_step()" not in code
    assert code.startswith("try:\n    import torch_xla.core.xla_model as xm\n")


def test_uses_of_a_shim_only_name_are_kept_and_reported(migrate):
    source = (
        "try:\n"
        "    import torch_xla.debug.metrics as met\n"
        "except ImportError:\n"
        "    met = None\n\n\n"
        "def report():\n"
        "    return met.metrics_report() if met is not None else ''\n"
    )
    result = migrate(source)
    assert result.code == source
    assert [f.rule for f in result.findings] == ["NM190", "NM190"]
    assert not any(f.applied for f in result.findings)


def test_a_replacement_inside_an_fstring_takes_the_other_quotes(migrate):
    source = 'import torch_xla.runtime as xr\n\nprint(f"running on {xr.device_type()}")\n'
    code = migrate(source).code
    ast.parse(code)
    assert "print(f\"running on {'NEURON'}\")" in code


def test_an_unused_legacy_import_is_removed_and_explained(migrate):
    source = "import torch\nimport torch_xla.distributed.xla_backend\n\nx = torch.ones(1)\n"
    result = migrate(source)
    assert result.code == "import torch\n\nx = torch.ones(1)\n"
    (finding,) = result.findings
    assert finding.rule == "NM191" and finding.applied and finding.span.line == 2
    assert "import torch_xla.distributed.xla_backend" in finding.message


def test_a_deleted_line_hands_its_comment_and_gap_to_the_next_statement(migrate):
    source = (
        "import torch_xla.core.xla_model as xm\n\n\n"
        "def step(opt):\n"
        "    opt.step()\n\n"
        "    # launch the graph\n"
        "    xm.mark_step()\n"
        "    return opt\n"
    )
    assert migrate(source).code == (
        "def step(opt):\n"
        "    opt.step()\n\n"
        "    # launch the graph\n"
        "    return opt\n"
    )


def test_added_imports_are_set_apart_from_the_code(migrate):
    source = "import torch_xla.core.xla_model as xm\n\nrank = xm.get_ordinal()\n"
    assert migrate(source).code == 'import os\n\nrank = int(os.environ.get("RANK", "0"))\n'


def test_suppressed_edit_is_reported_and_not_made(migrate):
    source = "import torch_xla.core.xla_model as xm\n\nxm.mark_step()  # neuron-migrate: ignore[NM110]\n"
    result = migrate(source)
    assert result.code == source
    assert [(f.rule, f.suppressed) for f in result.findings] == [("NM110", True)]


def test_output_is_deterministic(migrate):
    source = (
        "import torch_xla.core.xla_model as xm\n"
        "import torch.distributed as dist\n\n"
        "dist.init_process_group('xla')\n"
        "xm.master_print(xm.get_ordinal(), xm.xrt_world_size())\n"
    )
    assert len({migrate(source).code for _ in range(3)}) == 1


def test_each_removed_import_points_at_its_own_line(migrate):
    source = (
        "import torch_xla.core.xla_model as xm\n"
        "from torch_xla.core import xla_model\n"
        "from torch_xla.distributed import parallel_loader as pl, xla_multiprocessing\n\n"
        "x = 1\n"
    )
    result = migrate(source)
    assert result.code == "x = 1\n"
    removed = sorted((f.span.line, f.message.split("`")[1]) for f in result.findings)
    assert removed == [
        (1, "import torch_xla.core.xla_model as xm"),
        (2, "from torch_xla.core import xla_model"),
        (3, "from torch_xla.distributed import parallel_loader as pl"),
        (3, "from torch_xla.distributed import xla_multiprocessing"),
    ]


LONG_STATEMENT = (
    "from neuronx_distributed.parallel_layers import parallel_state\n\n"
    "sampler = make_sampler(\n"
    "    data,\n"
    "    rank=parallel_state.get_data_parallel_rank(),\n"
    "    size=parallel_state.get_data_parallel_size(),  # replicas\n"
    ")\n"
)


def test_a_use_below_the_first_line_of_its_statement_gets_a_tag_on_its_own_line(migrate):
    code = migrate(LONG_STATEMENT).code
    lines = code.splitlines()
    assert "    rank=parallel_state.get_data_parallel_rank(),  # TODO(neuron-migrate NM421): see above" in lines
    assert "    size=parallel_state.get_data_parallel_size(),  # replicas  # TODO(neuron-migrate NM421): see above" in lines
    assert migrate(code).code == code
    assert "see above" not in migrate(LONG_STATEMENT, no_comments=True).code


def test_a_leftover_below_the_first_line_of_its_statement_gets_a_tag_too(migrate):
    source = (
        "import torch_xla.core.xla_model as xm\n\n"
        "state = dict(\n"
        "    weights=weights,\n"
        "    kind=xm.xla_device_kind(),\n"
        ")\n"
    )
    code = migrate(source).code
    assert "    kind=xm.xla_device_kind(),  # TODO(neuron-migrate NM100): see above\n" in code
    assert code.count("NM100") == 2 and migrate(code).code == code


def test_a_legacy_use_inside_a_shim_is_reported_on_its_own_line(migrate):
    source = (
        "if is_torch_xla_available():\n"
        "    import torch_xla.core.xla_model as xm\n\n\n"
        "def seed(s):\n"
        "    if is_torch_xla_available():\n"
        "        xm.set_rng_state(s)\n"
    )
    result = migrate(source)
    assert result.code == source
    assert [(f.rule, f.span.line) for f in result.findings] == [("NM190", 1), ("NM190", 6), ("NM190", 7)]


def test_a_decorator_below_the_first_one_gets_the_tag_of_its_leftover(migrate):
    source = (
        "import pytest\n"
        "from optimum.neuron.utils.testing_utils import is_trainium_test\n\n\n"
        "@pytest.mark.slow\n"
        "@is_trainium_test\n"
        "def test_train():\n"
        "    pass\n"
    )
    code = migrate(source).code
    assert "\n@is_trainium_test  # TODO(neuron-migrate NM100): see above\n" in code
    assert migrate(code).code == code
