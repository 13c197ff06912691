"""torch_xla's pure-Python helpers (SampleGenerator, RateTracker, test_utils): the migrated code is
run here and must behave, and print, as the torch_xla helper it replaces."""

from __future__ import annotations

import datetime as real_datetime
import types

import pytest


def _run(code: str, **overrides) -> dict:
    """Execute migrated code; ``overrides`` replace module globals (a fake clock) after the imports."""
    namespace: dict = {"__name__": "migrated"}
    exec(compile(code, "migrated.py", "exec"), namespace)
    namespace.update(overrides)
    return namespace


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def time(self):
        return self.now


class FixedDatetime:
    @staticmethod
    def now():
        return real_datetime.datetime(2024, 5, 1, 12, 34, 56)


def test_sample_generator_list_yields_the_same_sample_with_the_same_length_every_epoch(migrate):
    source = (
        "import torch\n"
        "import torch_xla.utils.utils as xu\n\n"
        "sample = (torch.zeros(2, 3), torch.zeros(2))\n"
        "loader = xu.SampleGenerator(data=sample, sample_count=10 // 2 // 1)\n"
    )
    result = migrate(source)
    assert "import torch_xla" not in result.code
    namespace = _run(result.code)
    loader = namespace["loader"]
    assert len(loader) == 5
    for _ in range(2):  # SampleGenerator could be iterated once per epoch
        batches = list(loader)
        assert len(batches) == 5
        assert all(batch is namespace["sample"] for batch in batches)


def test_rate_tracker_class_smooths_like_torch_xla(migrate):
    result = migrate("import torch_xla.core.xla_model as xm\n\ntracker = xm.RateTracker()\n")
    assert "import torch_xla" not in result.code
    clock = FakeClock()
    namespace = _run(result.code, time=clock)
    tracker = namespace["RateTracker"]()
    tracker.add(10)
    clock.now += 1
    assert tracker.rate() == pytest.approx(10.0)  # the first rate is not smoothed
    tracker.add(30)
    clock.now += 1
    # torch_xla: (1 - 0.4) * current + 0.4 * previous
    assert tracker.rate() == pytest.approx(0.6 * 30 + 0.4 * 10)
    assert tracker.global_rate() == pytest.approx(40 / 2)
    assert tracker.rate() == 0.0  # no time passed: torch_xla reports 0.0
    assert namespace["RateTracker"](smooth_factor=0.8)._smooth_factor == 0.8


def test_rate_tracker_reads_the_smoothing_from_the_environment_like_torch_xla(migrate, monkeypatch):
    result = migrate("import torch_xla.core.xla_model as xm\n\ntracker = xm.RateTracker()\n")
    monkeypatch.setenv("RATE_TRACKER_SMOOTHING", "0.9")
    assert _run(result.code)["tracker"]._smooth_factor == 0.9


LOGGING = (
    "import torch_xla.test.test_utils as test_utils\n\n"
    "def log(device, writer):\n"
    "    test_utils.print_training_update(device, 3, 0.5, 2.0, 1.0, 1, summary_writer=writer)\n"
    "    test_utils.print_training_update(device, 4, 0.25, 2.0, 1.0)\n"
    "    test_utils.print_test_update(device, 97.5, epoch=1)\n"
    "    test_utils.print_test_update(device, None)\n"
)


def test_progress_lines_keep_torch_xla_s_format(migrate, capsys):
    result = migrate(LOGGING)
    assert "import torch_xla" not in result.code
    namespace = _run(result.code, datetime=FixedDatetime)
    writer = types.SimpleNamespace(scalars=[])
    writer.add_scalar = lambda name, value, step=None: writer.scalars.append((name, value, step))
    namespace["log"]("neuron:0", writer)
    assert capsys.readouterr().out.splitlines() == [
        "| Training Device=neuron:0/0 Epoch=1 Step=3 Loss=0.50000 Rate=2.00 GlobalRate=1.00 Time=12:34:56",
        "| Training Device=neuron:0/0 Step=4 Loss=0.25000 Rate=2.00 GlobalRate=1.00 Time=12:34:56",
        "| Test Device=neuron:0/0 Epoch=1 Accuracy=97.50 Time=12:34:56",
        "| Test Device=neuron:0/0 Time=12:34:56",
    ]
    assert writer.scalars == [("examples/sec", 2.0, None), ("average_examples/sec", 1.0, None)]


def test_each_helper_is_defined_once_and_a_second_run_changes_nothing(migrate):
    result = migrate(LOGGING + "    test_utils.write_to_summary(writer, 1, {'a': 1})\n")
    assert result.code.count("def print_training_update(") == 1
    assert result.code.count("def write_to_summary(") == 1  # also needed by print_training_update
    assert result.code.index("def write_to_summary(") < result.code.index("def print_training_update(")
    assert migrate(result.code).code == result.code


def test_helpers_go_after_the_last_import_above_the_file_s_definitions(migrate):
    source = (
        "import sys\n\n"
        "FLAGS = sys.argv[1:]\n\n"
        "import torch_xla.core.xla_model as xm\n"
        "import os\n\n\n"
        "def main():\n"
        "    return xm.RateTracker()\n"
    )
    code = migrate(source).code
    assert code.index("import os") < code.index("class RateTracker") < code.index("def main")
    assert code.index("FLAGS =") < code.index("class RateTracker")


def test_summary_helpers_tolerate_a_missing_writer_and_drop_the_xla_metrics(migrate):
    source = (
        "import torch_xla.test.test_utils as test_utils\n\n"
        "writer = test_utils.get_summary_writer(None)\n"
        "test_utils.write_to_summary(writer, 1, dict_to_write={'acc': 1.0}, write_xla_metrics=True)\n"
        "test_utils.close_summary_writer(writer)\n"
    )
    result = migrate(source)
    assert "write_xla_metrics" not in result.code
    assert "# neuron-migrate(NM172): XLA metrics are no longer written" in result.code
    assert _run(result.code)["writer"] is None


def test_get_summary_writer_writes_its_start_timestamp(migrate, monkeypatch):
    created = []

    class SummaryWriter:
        def __init__(self, log_dir):
            created.append(log_dir)
            self.scalars = []

        def add_scalar(self, name, value, step=None):
            self.scalars.append((name, value, step))

    tensorboard = types.ModuleType("torch.utils.tensorboard")
    tensorboard.SummaryWriter = SummaryWriter
    monkeypatch.setitem(__import__("sys").modules, "torch.utils.tensorboard", tensorboard)
    result = migrate("import torch_xla.test.test_utils as tu\n\nwriter = tu.get_summary_writer('runs/a')\n")
    clock = FakeClock()
    namespace = _run(result.code.replace("writer = get_summary_writer('runs/a')\n", ""), time=clock)
    writer = namespace["get_summary_writer"]("runs/a")
    assert created == ["runs/a"]
    assert writer.scalars == [("TensorboardStartTimestamp", 100.0, 0)]


def test_now_keeps_its_format_and_reuses_the_file_s_datetime_import(migrate):
    source = (
        "import datetime\n"
        "import torch_xla.test.test_utils as test_utils\n\n"
        "a = test_utils.now()\n"
        "b = test_utils.now('%Y')\n"
    )
    code = migrate(source).code
    assert 'a = datetime.datetime.now().strftime("%H:%M:%S")\n' in code
    assert "b = datetime.datetime.now().strftime('%Y')\n" in code
    assert "from datetime import" not in code


def test_a_from_import_gets_the_next_step_and_keeps_its_import(migrate):
    source = "from torch_xla.core.xla_model import RateTracker\n\ntracker = RateTracker()\n"
    result = migrate(source)
    assert "class RateTracker" not in result.code
    assert "# TODO(neuron-migrate NM171): replace the `from torch_xla.core.xla_model import RateTracker` line" in result.code
    assert "from torch_xla.core.xla_model import RateTracker\n" in result.code


def test_a_helper_name_the_file_already_uses_is_left_to_a_human(migrate):
    source = (
        "import torch_xla.test.test_utils as test_utils\n\n"
        "def write_to_summary(*args):\n"
        "    pass\n\n"
        "test_utils.write_to_summary(None, 1, {})\n"
    )
    result = migrate(source)
    assert result.code.count("def write_to_summary(") == 1
    assert "# TODO(neuron-migrate NM172): `write_to_summary` already means something else" in result.code
    assert "test_utils.write_to_summary(None, 1, {})" in result.code


def test_a_module_the_helper_needs_under_a_taken_name_comes_in_under_another(migrate):
    source = "from time import time\nimport torch_xla.core.xla_model as xm\n\nt = time()\nr = xm.RateTracker()\n"
    code = migrate(source).code
    assert "import time as time_module\n" in code
    assert "self._start = self._last = time_module.time()" in code
    assert "t = time()\n" in code


def test_xla_checkpoint_becomes_torch_s(migrate):
    source = "import torch_xla.utils.checkpoint as xcp\n\ny = xcp.checkpoint(f, x, use_reentrant=False)\n"
    code = migrate(source).code
    assert "import torch_xla" not in code
    assert "y = checkpoint(f, x, use_reentrant=False)" in code
    assert "from torch.utils.checkpoint import checkpoint\n" in code


def test_a_helper_whose_own_helper_name_is_taken_says_which_name(migrate):
    source = (
        "import torch_xla.test.test_utils as test_utils\n\n"
        "write_to_summary = None\n"
        "test_utils.print_training_update('neuron', 1, 0.5, 1.0, 1.0)\n"
    )
    code = migrate(source).code
    assert "def print_training_update(" not in code
    assert code.count("# TODO(neuron-migrate NM172)") == 1
    assert "`write_to_summary` already means something else" in code


def test_convert_to_cpu_copies_every_tensor_of_a_checkpoint_and_keeps_the_rest(migrate):
    import torch

    source = (
        "import torch\n"
        "import torch_xla.core.xla_model as xm\n\n"
        "def snapshot(state, writes):\n"
        "    return xm._maybe_convert_to_cpu(state, convert=writes)\n"
    )
    result = migrate(source)
    assert "torch_xla" not in result.code
    snapshot = _run(result.code)["snapshot"]
    weight = torch.ones(2, 2)
    state = {"model": {"weight": weight}, "optimizer": [torch.zeros(3), {"step": 7}], "epoch": 2, "name": "bert"}
    copied = snapshot(state, True)
    assert copied["epoch"] == 2 and copied["name"] == "bert" and copied["optimizer"][1] == {"step": 7}
    assert copied["model"]["weight"].device.type == "cpu" and torch.equal(copied["model"]["weight"], weight)
    assert copied is not state and copied["model"] is not state["model"]  # a new structure, as torch_xla made
    assert snapshot(state, False) is state  # convert=False handed the data back as it was


def test_torch_xla_version_checks_read_torch_s_version(migrate):
    import torch

    source = (
        "from torch_xla import __version__\n\n"
        'version_tuple = tuple(map(int, __version__.split(".")[:2]))\n'
    )
    result = migrate(source)
    assert "torch_xla" not in result.code
    assert _run(result.code)["version_tuple"] == tuple(map(int, torch.__version__.split(".")[:2]))
