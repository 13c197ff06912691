"""Engine promises that are not about one rule: shims, f-strings, import edits, deleted lines."""

from __future__ import annotations

import ast


def test_a_name_bound_by_a_shim_and_by_a_plain_import_is_migrated(migrate_keeping_dual_stack):
    source = (
        "try:\n"
        "    import torch_xla.core.xla_model as xm\n"
        "except ImportError:\n"
        "    xm = None\n"
        "xm.mark_step()\n"
        "import torch_xla.core.xla_model as xm\n"
    )
    code = migrate_keeping_dual_stack(source).code
    assert "xm.mark_step()" not in code
    assert code.startswith("try:\n    import torch_xla.core.xla_model as xm\n")


def test_a_try_guard_that_only_imported_what_the_rewrite_no_longer_needs_goes(migrate):
    source = (
        "try:\n"
        "    import torch_xla.core.xla_model as xm\n"
        "except ImportError:\n"
        "    xm = None\n"
        "xm.mark_step()\n"
        "import torch_xla.core.xla_model as xm\n"
    )
    assert migrate(source).code.strip() == ""


def test_uses_of_a_shim_only_name_are_kept_and_reported(migrate_keeping_dual_stack):
    source = (
        "try:\n"
        "    import torch_xla.debug.metrics as met\n"
        "except ImportError:\n"
        "    met = None\n\n\n"
        "def report():\n"
        "    return met.metrics_report() if met is not None else ''\n"
    )
    result = migrate_keeping_dual_stack(source)
    assert result.code == source
    # the try only imports (the neuron side needs nothing of it); the use is reported, not rewritten
    assert [(f.rule, f.span.line) for f in result.findings] == [("NM190", 8)]
    assert not any(f.applied for f in result.findings)


def test_a_fallback_name_tested_before_use_tests_the_probe_once_migrated(migrate):
    source = (
        "try:\n"
        "    import torch_xla.debug.metrics as met\n"
        "except ImportError:\n"
        "    met = None\n\n\n"
        "def report():\n"
        "    return met.metrics_report() if met is not None else ''\n"
    )
    result = migrate(source)
    assert result.code == (
        "try:\n"
        "    import torch_neuronx.metrics\n"
        "except ImportError:\n"
        "    torch_neuronx = None\n\n\n"
        "def report():\n"
        "    # neuron-migrate(NM160): counter names differ from XLA's (e.g. CompilationCache.InMemoryHits); metrics "
        "stay empty unless TORCH_NEURONX_METRICS_ENABLED=1\n"
        "    return torch_neuronx.metrics.report() if torch_neuronx is not None else ''\n"
    )
    assert migrate(result.code).code == result.code


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


def test_a_guard_of_another_shape_is_kept_and_marked_with_dual_stack_kept(migrate_keeping_dual_stack):
    source = (
        "if is_torch_xla_available():\n"
        "    import torch_xla.core.xla_model as xm\n\n\n"
        "def seed(s):\n"
        "    if not is_torch_xla_available():\n"
        "        return\n"
        "    xm.set_rng_state(s)\n"
    )
    result = migrate_keeping_dual_stack(source)
    assert [(f.rule, f.span.line, f.safety) for f in result.findings] == [("NM190", 6, "manual"), ("NM190", 8, "manual")]
    assert result.code == source.replace(
        "    if not", "    # TODO(neuron-migrate NM190): " + result.findings[0].message + "\n    if not"
    )


def test_an_availability_guard_gains_a_neuron_branch_with_dual_stack_kept(migrate_keeping_dual_stack):
    source = (
        "from transformers.utils import is_torch_xla_available\n\n"
        "if is_torch_xla_available():\n"
        "    import torch_xla.core.xla_model as xm\n\n\n"
        "def seed(s):\n"
        "    if is_torch_xla_available():\n"
        "        xm.set_rng_state(s)\n"
    )
    code = migrate_keeping_dual_stack(source).code
    assert "    if is_torch_xla_available():\n        xm.set_rng_state(s)\n    elif is_torch_neuron_available():\n" in code
    assert code.endswith("    elif is_torch_neuron_available():\n        torch.manual_seed(s)\n")
    assert "if is_torch_xla_available():\n    import torch_xla.core.xla_model as xm\n" in code
    assert migrate_keeping_dual_stack(code).code == code


def test_a_decorator_below_the_first_one_gets_the_tag_of_its_leftover(migrate):
    source = (
        "import pytest\n"
        "from torch_xla.utils.keyd_queue import locked\n\n\n"
        "@pytest.mark.slow\n"
        "@locked\n"
        "def test_train():\n"
        "    pass\n"
    )
    code = migrate(source).code
    assert "\n@locked  # TODO(neuron-migrate NM100): see above\n" in code
    assert migrate(code).code == code


SCATTER = (
    "import torch_xla.core.xla_model as xm\n\n\n"
    "def shard(grad, n):\n"
    "    # keep the shards small\n"
    "    part = xm.reduce_scatter(xm.REDUCE_SUM, grad, 1.0, 0, n)\n"
    "    return part\n"
)


def _todos(code: str) -> list[str]:
    return [line.strip() for line in code.splitlines() if "TODO(neuron-migrate" in line]


def test_a_todo_whose_code_was_edited_away_goes_on_the_next_run(migrate):
    first = migrate(SCATTER).code
    assert [t.split(")")[0] for t in _todos(first)] == ["# TODO(neuron-migrate NM129"]
    edited = first.replace("xm.reduce_scatter(xm.REDUCE_SUM, grad, 1.0, 0, n)", "scatter_by_hand(grad, n)")
    second = migrate(edited).code
    assert _todos(second) == []
    assert "    # keep the shards small\n    part = scatter_by_hand(grad, n)\n" in second


def test_a_rerun_keeps_one_copy_of_each_marker(migrate):
    first = migrate(SCATTER).code
    assert migrate(first).code == first
    assert len(_todos(first)) == 1


def test_a_todo_that_now_reads_differently_is_replaced_not_stacked(migrate):
    source = "import torch_xla.core.xla_model as xm\n\n\ndef mean(loss, g):\n    return xm.all_reduce(xm.REDUCE_SUM, loss, groups=g) / 4\n"
    first = migrate(source).code
    assert "replica groups" in _todos(first)[0]
    second = migrate(first.replace(", groups=g", "")).code
    todos = _todos(second)
    assert len(todos) == 1 and "used inside an expression" in todos[0]


def test_only_the_tool_s_own_stale_markers_go(migrate):
    source = (
        "# TODO(neuron-migrate NM129): use `dist.reduce_scatter_single(...)`\n"
        "# TODO(me): benchmark this\n"
        "part = scatter_by_hand(grad, n)\n"
        "# neuron-migrate(NM113): xm.optimizer_step also averaged gradients across ranks\n"
        "optimizer.step()\n"
        "# TODO(neuron-migrate NM502): deleted XLA_USE_BF16: make the precision explicit in code\n"
        "model = build()\n"
    )
    code = migrate(source).code
    assert code == source.replace("# TODO(neuron-migrate NM129): use `dist.reduce_scatter_single(...)`\n", "")


def test_markers_of_rules_not_selected_are_kept():
    from neuron_migrate.migrate.engine import RulePlan, migrate_python

    source = "def f(grad, n):\n    # TODO(neuron-migrate NM129): use `dist.reduce_scatter_single(...)`\n    return grad\n"
    assert migrate_python(source, "example.py", RulePlan.build(select=("NM110",))).code == source
    assert "NM129" not in migrate_python(source, "example.py", RulePlan.build()).code


def test_a_file_with_only_stale_markers_left_passes_the_prefilter(plan):
    from neuron_migrate.migrate.prefilter import Prefilter

    assert Prefilter(plan.triggers())(b"# TODO(neuron-migrate NM129): use dist\npart = mine(grad)\n")


def test_a_one_line_suite_keeps_its_form_or_becomes_a_block(migrate):
    source = (
        "import torch_xla.core.xla_model as xm\n\n\n"
        "def step(ok, n):\n"
        "    for _ in range(n): xm.mark_step()\n"
        "    if ok: n += 1; xm.mark_step()\n"
        "    if not ok: xm.rendezvous(\"wait\")  # the others wait\n"
        "    if ok: xm.mark_step()  # neuron-migrate: ignore\n"
        "    return n\n"
    )
    code = migrate(source).code
    assert "    for _ in range(n): pass\n    if ok: n += 1\n" in code
    assert "    if not ok:  # the others wait\n        if dist.is_initialized():\n            dist.barrier()\n" in code
    assert "    if ok: xm.mark_step()  # neuron-migrate: ignore\n" in code
    assert migrate(code).code == code


def test_a_line_of_several_statements_keeps_its_comment_once(migrate):
    """``a(); b()`` under a comment and a blank line, untouched or rewritten, in a file the rewrite changes."""
    source = (
        "import torch_xla.core.xla_model as xm\n\n"
        "for batch in range(3):\n\n"
        "    # switch to training mode\n"
        "    model.train(); opt.zero_grad()\n\n"
        "    # step the graph\n"
        "    loss = 1; xm.mark_step(); y = 2\n"
        "device = xm.xla_device()\n"
    )
    code = migrate(source).code
    assert code.count("# switch to training mode") == 1 and code.count("# step the graph") == 1
    assert "\n\n    # switch to training mode\n    model.train(); opt.zero_grad()\n" in code
    assert "    # step the graph\n    loss = 1; y = 2\n" in code
    assert migrate(code).code == code


def test_a_dropped_marker_is_reported(migrate):
    source = "# TODO(neuron-migrate NM129): use `dist.reduce_scatter_single(...)`\npart = scatter_by_hand(grad, n)\n"
    result = migrate(source)
    assert result.code == "part = scatter_by_hand(grad, n)\n"
    [finding] = result.findings
    assert (finding.rule, finding.applied, finding.span.line) == ("NM129", True, 2)
    assert finding.before.startswith("# TODO(neuron-migrate NM129)") and "removed" in finding.message


def test_an_ignored_rule_leaves_its_code_without_a_no_equivalent_marker():
    from neuron_migrate.migrate.engine import RulePlan, migrate_python

    source = "import torch_xla.core.xla_model as xm\n\nxm.mark_step()\nkind = xm.xla_device_kind()\n"
    result = migrate_python(source, "t.py", RulePlan.build(ignore=("NM110",)))
    # mark_step has a migration (NM110), turned off: no NM100 claims there is none; the unknown API keeps its TODO
    assert [(f.rule, f.span.line) for f in result.findings if f.rule == "NM100"] == [("NM100", 4)]
    assert "xm.mark_step()\n" in result.code and result.code.count("TODO(neuron-migrate NM100)") == 1
