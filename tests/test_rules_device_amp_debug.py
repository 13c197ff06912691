"""Device, precision, debug and environment-variable rules: the env table and what the fixtures
cannot show (the table's lookup order, flag editing, prefilter triggers, import clean-up)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

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


def test_a_legacy_import_read_in_one_scope_keeps_every_import_of_that_name(migrate):
    # The unused import at the top and the read one in the function bind one name; the removal goes by
    # name, so neither goes (a later run, once the function is migrated, removes both).
    source = (
        "import torch_xla.core.xla_model as xm\n\n"
        "xm = None\n\n\n"
        "def ordinal():\n"
        "    import torch_xla.core.xla_model as xm\n\n"
        "    return xm.get_ordinal\n"
    )
    code = migrate(source).code
    assert code.count("import torch_xla.core.xla_model as xm") == 2


def test_a_legacy_import_read_only_in_a_string_annotation_is_kept(migrate):
    source = (
        "from torch_xla.distributed.parallel_loader import MpDeviceLoader\n\n"
        "MpDeviceLoader = None\n\n\n"
        'def wrap(loader: "MpDeviceLoader"):\n'
        "    return loader\n"
    )
    assert "from torch_xla.distributed.parallel_loader import MpDeviceLoader" in migrate(source).code


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


# --- device-type checks and device names: what the migrated program does ---------------------------------------

DEVICE_CHOICE = ROOT / "tests" / "emulator_programs" / "device_choice.py"
STUBS = ROOT / "tests" / "stubs"
LAUNCHER_VARS = ("LOCAL_RANK", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_WORLD_SIZE", "PJRT_DEVICE")


def _program_env(*paths, **extra):
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    env.update(OMP_NUM_THREADS="1", **extra)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _run(args, cwd, env):
    proc = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_migrated_device_choice_takes_the_trainium_branch_on_the_neuron_device(tmp_path):
    """The legacy script on the torch_xla test double as on Trainium (PJRT_DEVICE=NEURON), then its
    migration on the emulated device, given the old ``--device xla``, the new name, or nothing."""
    legacy = _run([str(DEVICE_CHOICE), "--device", "xla"], tmp_path, _program_env(STUBS, PJRT_DEVICE="NEURON"))
    assert legacy == "batch_size=4 device=cpu place=accelerator"

    shutil.copy(DEVICE_CHOICE, tmp_path / "device_choice.py")
    rewrite = subprocess.run([sys.executable, "-m", "neuron_migrate", "rewrite", "-q", str(tmp_path)],
                             env=_program_env(), capture_output=True, text=True, timeout=120)
    assert rewrite.returncode == 1, rewrite.stdout + rewrite.stderr
    assert "import torch_xla" not in (tmp_path / "device_choice.py").read_text()

    for args in (["--device", "xla"], ["--device", "neuron"], []):
        migrated = _run(["-m", "neuron_migrate", "emulate", "device_choice.py", *args], tmp_path, _program_env())
        assert migrated == "batch_size=4 device=neuron place=accelerator", args


@pytest.mark.parametrize(
    ("check", "value"),
    [
        ('xr.device_type() == "NEURON"', "True"),
        ('"TPU" == xr.device_type()', "False"),
        ('xr.device_type() != "NEURON"', "False"),
        ('xr.device_type() == "neuron"', "False"),  # torch_xla never answered in lower case
        ('xr.device_type() in ("TPU", "NEURON")', "True"),
        ('xr.device_type() not in ["CPU"]', "True"),
        ('xm.xla_device_hw(dev) == "CUDA"', "False"),
    ],
)
def test_a_device_type_check_folds_to_its_value_on_trainium(migrate, check, value):
    source = f"import torch_xla.core.xla_model as xm\nimport torch_xla.runtime as xr\n\nok = {check}\n"
    result = migrate(source)
    assert result.code.endswith(f"\nok = {value}\n")
    (finding,) = [f for f in result.findings if f.rule == "NM104"]
    assert finding.safety == "review" and f"always {value}" in finding.fix


def test_a_device_type_compared_with_a_variable_keeps_its_trainium_value(migrate):
    result = migrate('import torch_xla.runtime as xr\n\nok = xr.device_type() == wanted\n')
    assert result.code == 'ok = "NEURON" == wanted\n'


def test_an_if_on_a_device_type_check_keeps_the_branch_trainium_took(migrate):
    source = (
        "import torch_xla.runtime as xr\n\n\n"
        "def pick():\n"
        '    if xr.device_type() == "NEURON": size = 4\n'
        "    else:\n"
        "        size = 16\n"
        '    if xr.device_type() == "TPU":\n'
        "        return size * 2\n"
        "    return size\n"
    )
    code = migrate(source).code
    assert "    size = 4\n" in code and "16" not in code
    # Nothing of the never-taken block may stand in its place, so it stays, marked, under `if False:`.
    assert '    if False:\n        return size * 2\n' in code and "delete the block" in code
    assert migrate(code).code == code


@pytest.mark.parametrize(
    ("value", "outside"),
    [
        ("device", True),
        ("args.device", True),
        ("self.device", True),
        ("self.args.eval_device", True),
        ('config["device"]', True),
        ('os.environ["DEVICE"]', True),
        ('os.environ.get("DEVICE", "cpu")', True),
        ("sys.argv[1]", True),
        ("batch.device", False),
        ("device.type", False),
        ("str(device)", False),
        ("kind", False),
    ],
)
def test_device_names_from_outside_are_told_from_device_objects(value, outside):
    import libcst as cst

    from neuron_migrate.rules.xla_device import from_outside

    assert from_outside(cst.parse_expression(value)) is outside


def test_a_device_name_from_outside_accepts_both_names_and_is_reviewed(migrate):
    result = migrate('import torch\n\nif args.device != "xla":\n    x = torch.ones(1)\n')
    assert 'if args.device not in ("neuron", "xla"):' in result.code
    (finding,) = [f for f in result.findings if f.rule == "NM106"]
    assert finding.safety == "review" and "launch" in finding.risks


def test_a_device_option_with_choices_from_elsewhere_is_told_to_accept_neuron(migrate):
    source = 'import argparse\n\nparser = argparse.ArgumentParser()\nparser.add_argument("--device", default="xla", choices=DEVICES)\n'
    code = migrate(source).code
    assert 'default="neuron", choices=DEVICES)' in code
    assert 'add "neuron" to its choices' in code


@pytest.mark.parametrize(
    ("condition", "folded"),
    [
        ('xr.device_type() == "TPU" and x', "False"),
        ('xr.device_type() == "TPU" and x and y', "False"),
        ('xr.device_type() == "NEURON" or x', "True"),
        ('xr.device_type() == "NEURON" and x', "x"),
        ('xr.device_type() == "CUDA" or x and y', "x and y"),
        # A known right operand decides nothing: x is still evaluated, and is the value when falsy.
        ('x and xr.device_type() == "TPU"', "x and False"),
    ],
)
def test_a_condition_a_device_type_check_decides_is_folded_whole(migrate, condition, folded):
    result = migrate(f"import torch_xla.runtime as xr\n\nok = {condition}\n")
    assert result.code.endswith(f"\nok = {folded}\n")
    assert migrate(result.code).code == result.code


def test_a_device_helper_not_recognised_is_marked_at_its_def(migrate):
    source = (
        "import torch_xla.core.xla_model as xm\n"
        "from transformers.utils import is_torch_xla_available\n\n\n"
        "def get_device(name):\n"
        "    if is_torch_xla_available():\n"
        "        def probe():\n"
        "            return 1\n"
        '    makers = {"xla": xm.xla_device}\n'
        "    return makers[name]()\n"
    )
    lines = migrate(source).code.splitlines()
    marker = lines.index("def get_device(name):") - 1
    assert lines[marker].startswith("# TODO(neuron-migrate NM106): this helper picks the device by name")


def test_a_recognised_device_helper_gets_no_todo(migrate):
    source = (
        "import torch\nimport torch_xla.core.xla_model as xm\n\n\n"
        "def get_device(name):\n"
        '    if name == "xla":\n'
        "        return xm.xla_device()\n"
        '    return torch.device("cpu")\n'
    )
    result = migrate(source)
    assert 'if name in ("neuron", "xla"):\n        return torch.device("neuron")' in result.code
    assert not [f for f in result.findings if f.rule == "NM106" and f.safety == "manual"]


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


TRY_GUARD_AND_FLAG = (
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


def test_code_under_a_try_guard_and_its_flag_is_migrated_and_the_guard_probes_torchneuron(migrate):
    code = migrate(TRY_GUARD_AND_FLAG).code
    assert code.startswith("import torch\n\ntry:\n    import torch_neuronx  # noqa: F401")
    assert "def step():\n    if not HAVE_XLA:\n" in code
    assert 'return torch.device("neuron")' in code
    assert "debug" not in code and "xm" not in code  # the flag's branch held only the mark_step: it went


def test_a_use_of_a_try_imported_name_outside_any_guard_is_migrated(migrate_keeping_dual_stack):
    migrate = migrate_keeping_dual_stack
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
