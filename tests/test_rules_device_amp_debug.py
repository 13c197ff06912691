"""Device, precision, debug and environment-variable rules: the env table and what the fixtures
cannot show (the table's lookup order, flag editing, prefilter triggers, import clean-up)."""

from __future__ import annotations

import pytest

from neuron_migrate.migrate.prefilter import Prefilter
from neuron_migrate.rules.base import get_rule
from neuron_migrate.rules.env_vars import (
    BY_HAND,
    DELETE,
    DELETE_BY_HAND,
    ENV_VARS,
    KEEP,
    RENAME,
    classify_env_var,
    drop_flags,
    flags_in,
)

CC_FLAGS = ENV_VARS["NEURON_CC_FLAGS"].drop_flags


@pytest.mark.parametrize(
    ("name", "rule", "kind"),
    [
        ("PJRT_DEVICE", "NM501", DELETE),
        ("PT_XLA_DEBUG_LEVEL", "NM501", DELETE),
        ("XLA_SAVE_TENSORS_FMT", "NM501", DELETE),
        ("XLA_SOMETHING_NEW", "NM501", BY_HAND),
        ("XLA_USE_BF16", "NM502", DELETE_BY_HAND),
        ("XLA_DOWNCAST_BF16", "NM502", DELETE_BY_HAND),
        ("NEURON_FRAMEWORK_DEBUG", "NM503", RENAME),
        ("XLA_USE_32BIT_LONG", "NM505", BY_HAND),
    ],
)
def test_exact_names_beat_prefixes_and_the_longest_prefix_wins(name, rule, kind):
    action = classify_env_var(name)
    assert (action.rule, action.kind) == (rule, kind)


@pytest.mark.parametrize("name", ["OMP_NUM_THREADS", "NEURON_RT_VISIBLE_CORES", "TORCH_NEURONX_NEFF_CACHE_DIR", "XLA"])
def test_variables_outside_the_table_are_left_alone(name):
    assert classify_env_var(name, "1") is None


def test_compiler_flags_matter_only_when_they_hold_xla_era_flags():
    assert classify_env_var("NEURON_CC_FLAGS") is None
    assert classify_env_var("NEURON_CC_FLAGS", "--model-type=transformer -O1") is None
    assert classify_env_var("NEURON_CC_FLAGS", "--cache_directory=/x") is None
    assert classify_env_var("NEURON_CC_FLAGS", "-O1 --cache_dir=/x").kind == KEEP
    # A value still to be filled in (an f-string) is found by the flag name alone.
    assert classify_env_var("NEURON_CC_FLAGS", "--cache_dir=").kind == KEEP


def test_a_remote_compile_cache_cannot_follow_the_rename():
    local = classify_env_var("NEURON_COMPILE_CACHE_URL", "/fsx/cache")
    assert (local.kind, local.rename_to) == (RENAME, "TORCH_NEURONX_NEFF_CACHE_DIR")
    remote = classify_env_var("NEURON_COMPILE_CACHE_URL", "s3://bucket/cache")
    assert (remote.rule, remote.kind) == ("NM503", BY_HAND)
    assert "S3" in remote.message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("--model-type=transformer --cache_dir=/var/tmp/cache", "--model-type=transformer"),
        (" --retry_failed_compilation --cache_dir /tmp/c -O1", " -O1"),
        ("--cache_dir=/c", ""),
        ("-O1  --enable-fast-loading-neuron-binaries", "-O1  --enable-fast-loading-neuron-binaries"),
    ],
)
def test_drop_flags_keeps_the_other_flags_and_an_appended_fragment_s_leading_space(text, expected):
    assert drop_flags(text, CC_FLAGS) == expected


def test_flags_in_reports_flags_as_written():
    assert flags_in("-O1 --cache_dir=/c --retry_failed_compilation", CC_FLAGS) == [
        "--cache_dir=/c",
        "--retry_failed_compilation",
    ]


@pytest.mark.parametrize("pattern", sorted(ENV_VARS))
def test_every_table_row_belongs_to_a_rule_whose_triggers_let_its_files_through(pattern):
    action = ENV_VARS[pattern]
    rule = get_rule(action.rule)
    assert rule is not None
    name = pattern.rstrip("*") + ("NEW" if pattern.endswith("*") else "")
    source = f'import os\nos.environ["{name}"] = "1"\n'.encode()
    assert Prefilter(rule.meta.triggers)(source)
    assert b"torch_xla" not in source


def test_a_suppression_comment_keeps_the_setting(migrate):
    source = 'import os\n\nos.environ["PJRT_DEVICE"] = "NEURON"  # neuron-migrate: ignore[NM501]\n'
    result = migrate(source)
    assert result.code == source
    assert [f.suppressed for f in result.findings if f.rule == "NM501"] == [True]


def test_a_setter_whose_value_is_used_is_not_deleted(migrate):
    source = 'import os\n\nlevel = os.environ.setdefault("PJRT_DEVICE", "NEURON")\n'
    result = migrate(source)
    assert 'level = os.environ.setdefault("PJRT_DEVICE", "NEURON")' in result.code
    assert [(f.rule, f.safety, f.applied) for f in result.findings] == [("NM501", "manual", False)]


def test_a_legacy_import_shadowed_by_a_local_name_is_still_removed(migrate):
    source = (
        "import torch\n"
        "from torch_xla.core.xla_model import xla_device\n\n"
        "DEVICE = xla_device()\n\n\n"
        "def cpu_only():\n"
        '    xla_device = "cpu"\n'
        "    return torch.zeros(1, device=xla_device)\n"
    )
    result = migrate(source)
    assert "torch_xla" not in result.code
    assert 'DEVICE = torch.device("neuron")' in result.code


def test_a_legacy_import_listed_in_all_is_kept(migrate):
    source = (
        "from torch_xla.core.xla_model import xla_device\n\n"
        '__all__ = ["xla_device"]\n'
        "DEVICE = xla_device()\n"
    )
    assert "from torch_xla.core.xla_model import xla_device" in migrate(source).code


def test_an_attribute_named_like_a_legacy_import_does_not_keep_it(migrate):
    source = (
        "import torch\n"
        "from torch_xla.amp.syncfree import SGD\n\n"
        "OPTIMIZER = SGD\n"
    )
    result = migrate(source)
    assert result.code == "import torch\n\nOPTIMIZER = torch.optim.SGD\n"


def test_a_step_trace_keeps_only_its_name_and_says_where_the_step_boundary_went(migrate):
    source = "import torch_xla.debug.profiler as xp\n\nwith xp.StepTrace('train', step):\n    run()\n"
    code = migrate(source).code
    assert "with torch.profiler.record_function('train'):\n" in code
    assert "call prof.step() once per step" in code
    assert "import torch_xla" not in code


def test_a_trace_without_a_name_is_left_to_a_human(migrate):
    source = "import torch_xla.debug.profiler as xp\n\nwith xp.Trace(**labels):\n    run()\n"
    code = migrate(source).code
    assert "with xp.Trace(**labels):" in code
    assert "# TODO(neuron-migrate NM162): use `with torch.profiler.record_function(name):`" in code


def test_a_profiler_server_someone_keeps_a_handle_on_stays_with_its_todo(migrate):
    source = "import torch_xla.debug.profiler as xp\n\nself.server = xp.start_server(9012)\n"
    code = migrate(source).code
    assert "self.server = xp.start_server(9012)" in code
    assert "# TODO(neuron-migrate NM161): TorchNeuron has no profiler server" in code


def test_a_use_of_a_try_imported_name_outside_any_guard_is_migrated(migrate):
    source = (
        "try:\n"
        "    import torch_xla.core.xla_model as xm\n"
        "    HAVE_XLA = True\n"
        "except ImportError:\n"
        "    HAVE_XLA = False\n\n"
        "def step():\n"
        "    xm.mark_step()\n"
        "    if not HAVE_XLA:\n"
        "        return xm.xla_device()\n"
        "    if HAVE_XLA and debug:\n"
        "        xm.mark_step()\n"
    )
    code = migrate(source).code
    assert "def step():\n    if not HAVE_XLA:\n" in code  # unguarded: removed
    assert 'return torch.device("neuron")' in code  # `not HAVE_XLA` guards nothing legacy
    assert "    if HAVE_XLA and debug:\n        xm.mark_step()\n" in code  # guarded: kept
