"""How ``verify`` compares two records and explains where they part, on records written by hand.

The records have the recorder's format (``neuron_migrate/verify/site/sitecustomize.py``); the end-to-end runs
are in ``test_verify.py``.
"""

from __future__ import annotations

import copy
import json
import math

import pytest

from neuron_migrate.report import verification_html, verification_text
from neuron_migrate.report.verification import DIFFERENT, EQUAL, Edit, SideRun, Verification
from neuron_migrate.verify import causes
from neuron_migrate.verify.compare import compare, relative
from neuron_migrate.verify.records import Record, load


def tensor(norm, values=(0.5, -0.25), shape=(4, 4), dtype="float32", name=None):
    entry = {"shape": list(shape), "dtype": dtype, "device": "cpu", "norm": norm, "values": list(values)}
    if name:
        entry["name"] = name
    return entry


def training_record(steps=3, *, world=1, loss=2.0, grad=0.5, weight=1.0, lr=0.1, dtype="float32", autocast=False):
    """A run of ``steps`` optimizer steps of a one-weight model, as the recorder writes it."""
    events = [{"kind": "start", "step": 0, "world": world}]
    events.append({"kind": "params", "when": "before", "step": 0, "tensors": [tensor(weight, name="w")]})
    for step in range(steps):
        events += [
            {"kind": "batch", "step": step, "tensors": [tensor(10.0 + step, shape=(8, 4))]},
            {"kind": "output", "step": step, "what": "MLP", "training": True, "at": "train.py:40",
             "tensors": [tensor(3.0 - step * 0.1, dtype=dtype)]},
            {"kind": "loss", "step": step, "value": loss - step * 0.1, "dtype": dtype, "autocast": autocast,
             "at": "train.py:41"},
            {"kind": "grads", "step": step, "lr": [lr], "at": "train.py:43",
             "tensors": [tensor(grad, name="w")]},
            {"kind": "params", "when": "after", "step": step, "at": "train.py:43",
             "tensors": [tensor(weight - (step + 1) * lr * grad, name="w")]},
        ]
    events.append({"kind": "stop", "step": steps})
    return Record(0, events)


def changed(record, kind, step, update, when=None):
    """A copy of ``record`` with ``update`` applied to the first event of ``kind`` in ``step``."""
    record = copy.deepcopy(record)
    for event in record.events:
        if event["kind"] == kind and event["step"] == step and (when is None or event.get("when") == when):
            update(event)
            return record
    raise AssertionError(f"no {kind} event in step {step}")


def set_norm(norm, dtype=None):
    def update(event):
        event["tensors"][0]["norm"] = norm
        if dtype:
            event["tensors"][0]["dtype"] = dtype
    return update


def explained(legacy, migrated, legacy_env=None, edits=()):
    comparison = compare(legacy, migrated, 1e-5)
    assert comparison.first is not None
    return causes.explain(comparison.first, legacy, migrated, legacy_env or {}, list(edits))


def test_equal_records_compare_every_kind_of_value_and_agree():
    comparison = compare(training_record(), training_record(), 1e-5)

    assert comparison.first is None
    assert [row.equal for row in comparison.rows] == [True, True, True]
    assert comparison.compared == {"initial parameter": 1, "batch": 3, "output": 3, "loss": 3, "gradient": 3,
                                   "parameter": 3}


def test_a_difference_within_rtol_is_equal_and_one_past_it_is_not():
    legacy = training_record()
    close = changed(legacy, "loss", 1, lambda e: e.update(value=e["value"] * (1 + 5e-6)))
    far = changed(legacy, "loss", 1, lambda e: e.update(value=e["value"] * (1 + 5e-5)))

    assert compare(legacy, close, 1e-5).first is None
    first = compare(legacy, far, 1e-5).first
    assert (first.what, first.step) == ("loss", 1)
    assert first.difference == pytest.approx(5e-5, rel=1e-3)


def test_a_sampled_value_near_zero_is_measured_against_the_tensors_scale():
    legacy = training_record()
    nudged = changed(legacy, "params", 0, lambda e: e["tensors"][0].update(values=[0.5, 1e-9]), when="after")
    base = changed(legacy, "params", 0, lambda e: e["tensors"][0].update(values=[0.5, 0.0]), when="after")

    # 1e-9 against 0.0 is an infinite relative difference alone, but nothing next to the tensor's RMS (0.25)
    assert compare(base, nudged, 1e-5).first is None


def test_nan_equals_nan_and_differs_from_a_number():
    assert relative(math.nan, math.nan) == 0.0
    assert relative(math.nan, 1.0) == math.inf
    assert relative(math.inf, math.inf) == 0.0


def test_the_first_divergence_is_the_earliest_in_program_order():
    legacy = training_record()
    # step 1 parts at its output, step 2 at its batch: step 1 comes first, and within it the output
    migrated = changed(legacy, "output", 1, set_norm(9.0))
    migrated = changed(migrated, "batch", 2, set_norm(99.0))

    comparison = compare(legacy, migrated, 1e-5)

    assert (comparison.first.what, comparison.first.step) == ("output", 1)
    assert [row.equal for row in comparison.rows] == [True, False, False]


def test_different_batches_are_a_data_question():
    d = explained(training_record(), changed(training_record(), "batch", 0, set_norm(11.5)))

    assert (d.what, d.step) == ("batch", 0)
    assert "read different data" in d.cause and "seed" in d.fix


def test_different_initial_weights_point_at_the_random_initialization():
    d = explained(training_record(), training_record(weight=1.5))

    assert d.what == "initial parameter" and d.tensor == "w"
    assert "initialization" in d.cause


def test_a_dtype_difference_names_both_precisions():
    legacy = training_record()
    migrated = changed(legacy, "output", 0, set_norm(2.99, dtype="bfloat16"))

    d = explained(legacy, migrated)

    assert d.cause.startswith("the migrated side computes in bfloat16, the legacy in float32: the output tensor 0")
    assert d.migrated == "norm 2.99 bfloat16"


def test_a_cast_of_the_model_is_named_by_its_dtype_not_as_other_initial_weights():
    legacy = training_record()
    migrated = changed(legacy, "params", 0, set_norm(1.0039, dtype="bfloat16"), when="before")

    d = explained(legacy, migrated)

    assert d.what == "initial parameter"
    assert d.cause.startswith("the migrated side computes in bfloat16, the legacy in float32: the initial parameter w")
    assert "initialization" not in d.cause


def test_xla_use_bf16_on_the_legacy_side_is_named_with_the_edit_that_removed_it():
    legacy = changed(training_record(), "output", 0, set_norm(2.98))
    edits = [Edit("NM502", "run.sh", 11, "deleted XLA_USE_BF16", ["numerics"]),
             Edit("NM123", "train.py", 30, "xm.rendezvous() -> dist.barrier()", ["collectives"])]

    d = explained(legacy, training_record(), {"XLA_USE_BF16": "1"}, edits)

    assert d.cause.startswith("XLA_USE_BF16=1 ran the legacy side")
    assert [e.rule for e in d.edits] == ["NM502"], "only the edits whose risk fits the cause are listed"


def test_autocast_on_both_sides_with_a_small_difference_is_called_expected():
    legacy = training_record(autocast=True)
    migrated = changed(training_record(autocast=True), "output", 0, set_norm(3.0 * (1 + 4e-4)))

    d = explained(legacy, migrated)

    assert "autocast policies differ" in d.cause and "not a migration bug" in d.cause
    assert "--rtol" in d.fix


def test_autocast_on_one_side_only_is_named():
    migrated = changed(training_record(), "loss", 0, lambda e: e.update(value=2.01, autocast=True))

    d = explained(training_record(), migrated)

    assert d.cause == "autocast is on in the migrated program and off in the legacy one at this step"


def test_equal_losses_then_different_gradients_over_ranks_is_the_gradient_averaging():
    legacy = training_record(world=2)
    migrated = training_record(world=2, grad=1.0)
    edits = [Edit("NM113", "train.py", 43, "gradients averaged by hand, as xm.optimizer_step did", ["collectives"])]

    d = explained(legacy, migrated, edits=edits)

    assert (d.what, d.step) == ("gradient", 0)
    assert "not averaged over the ranks" in d.cause and "2 ranks" in d.cause
    assert "DistributedDataParallel" in d.fix
    assert d.edits == edits


def test_equal_gradients_then_different_parameters_with_another_learning_rate_names_both_rates():
    d = explained(training_record(lr=0.1), training_record(lr=0.2))

    assert (d.what, d.step) == ("parameter", 0)
    assert d.cause == "the learning rate differs: 0.1 on the legacy side, 0.2 on the migrated one"


def test_equal_gradients_and_rates_then_different_parameters_is_the_optimizer():
    migrated = changed(training_record(), "params", 1, set_norm(0.5), when="after")

    d = explained(training_record(), migrated)

    assert "optimizer's update differs" in d.cause


def test_a_call_one_side_makes_more_often_is_a_different_path():
    migrated = copy.deepcopy(training_record())
    migrated.events.insert(3, {"kind": "output", "step": 0, "what": "MLP", "tensors": [tensor(1.0)]})

    d = explained(training_record(), migrated)

    assert d.what == "count" and d.legacy == "1" and d.migrated == "2"
    assert "different paths" in d.cause


def test_edits_in_the_file_of_the_diverging_line_come_first_nearest_first():
    migrated = changed(training_record(), "output", 0, set_norm(2.5))
    edits = [Edit("NM150", "other.py", 1, "a", ["numerics"]), Edit("NM150", "train.py", 10, "b", ["numerics"]),
             Edit("NM150", "train.py", 39, "c", ["numerics"])]

    d = explained(training_record(), migrated, edits=edits)

    assert [e.message for e in d.edits] == ["c", "b", "a"]


def test_markers_left_in_the_migrated_code_are_read_with_their_rules_risks(tmp_path):
    (tmp_path / "train.py").write_text(
        "x = 1\n"
        "# neuron-migrate(NM113): gradients averaged by hand\n"
        "# TODO(neuron-migrate NM135): SPMD sharding has no direct equivalent\n", encoding="utf-8")

    found = causes.markers(tmp_path, {"NM113": ["collectives"]})

    assert [(e.rule, e.line, e.risks) for e in found] == [("NM113", 2, ["collectives"]), ("NM135", 3, [])]
    assert found[0].message == "gradients averaged by hand"


def test_records_are_read_per_rank_and_a_line_cut_short_is_dropped(tmp_path):
    lines = [json.dumps(event) for event in training_record(2).events]
    # a launcher that shares rank 0 with its worker records only its start
    (tmp_path / "rank0-100.jsonl").write_text(lines[0] + "\n", encoding="utf-8")
    (tmp_path / "rank0-101.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "rank1.jsonl").write_text("\n".join(lines[:4]) + '\n{"kind": "lo', encoding="utf-8")

    records = load(tmp_path)

    assert sorted(records) == [0, 1]
    assert records[0].steps == 2 and records[0].stopped
    assert len(records[1].events) == 4 and not records[1].stopped


def _result(outcome=EQUAL, divergence=None, rows=None):
    side = SideRun("legacy", "train.py", ["python", "train.py"], ".", "cpu", 0, 1.0, 3, True)
    other = SideRun("migrated", "new/train.py", ["python", "-m", "emulator", "new/train.py"], ".",
                    "neuron (emulated on CPU)", 0, 1.5, 3, True)
    comparison = compare(training_record(), training_record(), 1e-5)
    return Verification(side, other, outcome, 1e-5, 3, 1, rows or comparison.rows, divergence=divergence,
                        compared=comparison.compared)


def test_the_terminal_shows_both_runs_every_step_and_the_verdict():
    text = verification_text.render(_result())

    assert "  legacy: train.py on cpu, 1.0 s, 3 steps" in text
    assert "migrated: new/train.py on neuron (emulated on CPU), 1.5 s, 3 steps" in text
    assert text.count("  equal\n") == 3
    assert text.rstrip().endswith("verify: equal: 3 steps, 16 values compared within rtol 1e-05")


def test_the_terminal_and_the_page_show_the_divergence_with_its_cause_and_edits():
    legacy, migrated = training_record(lr=0.1), training_record(lr=0.2)
    d = causes.explain(compare(legacy, migrated, 1e-5).first, legacy, migrated, {}, [])
    d.edits = [Edit("NM113", "train.py", 43, "xm.optimizer_step(opt) -> opt.step() <b>", ["collectives"])]
    result = _result(DIFFERENT, d, compare(legacy, migrated, 1e-5).rows)

    text = verification_text.render(result)
    page = verification_html.render(result)

    assert "first divergence: step 0, parameter w: legacy norm 0.95, migrated norm 0.9" in text
    assert "  likely cause: the learning rate differs" in text
    assert "    train.py:43: NM113 xm.optimizer_step(opt) -> opt.step() <b>" in text
    assert text.rstrip().endswith("verify: different: the programs part at step 0, parameter w")
    assert page.count("<polyline") == 2, "both loss curves are drawn"
    assert "first divergence</title>" in page
    assert "&lt;b&gt;" in page and "<b>" not in page
    assert "script-src" not in page and "<script" not in page


def test_a_failed_side_shows_its_error_command_and_last_output():
    result = _result()
    result.outcome = "failed"
    result.migrated.error = "RuntimeError: the data loader broke at step 3"
    result.migrated.output_tail = "Traceback (most recent call last):\nRuntimeError: the data loader broke at step 3"

    text = verification_text.render(result)

    assert "the migrated side failed: RuntimeError: the data loader broke at step 3" in text
    assert "  command: python -m emulator new/train.py" in text
    assert "    Traceback (most recent call last):" in text
    assert text.rstrip().endswith("verify: could not compare: the migrated side did not run to the end")


def test_dropout_in_training_mode_is_named_with_the_flag_that_turns_it_off():
    legacy = changed(training_record(), "output", 0, lambda e: e.update(dropout=True))
    migrated = changed(legacy, "output", 0, set_norm(2.5))

    d = explained(legacy, migrated)

    assert "dropout in training mode" in d.cause and "--no-dropout" in d.fix


def test_legacy_ranks_that_all_read_the_same_batch_did_not_see_each_other():
    def rank(first_norm):
        return changed(training_record(world=2), "batch", 0, set_norm(first_norm))

    assert causes.ranks_alone([rank(10.0), rank(10.0)], [rank(10.0), rank(12.0)])
    assert not causes.ranks_alone([rank(10.0), rank(12.0)], [rank(10.0), rank(12.0)])


def test_migrated_ranks_that_start_alike_and_part_after_a_step_did_not_average():
    averaged = {0: training_record(world=2), 1: training_record(world=2)}
    alone = {0: training_record(world=2), 1: changed(training_record(world=2), "params", 1, set_norm(0.5), "after")}
    sharded = {0: training_record(world=2), 1: changed(alone[1], "params", 0, set_norm(0.3), "before")}

    assert causes.unaveraged_ranks(averaged, 1e-5) is None
    assert causes.unaveraged_ranks({0: training_record()}, 1e-5) is None, "one rank has nothing to agree with"
    assert causes.unaveraged_ranks(sharded, 1e-5) is None, "ranks that start apart hold shards"
    found = causes.unaveraged_ranks(alone, 1e-5)
    assert (found.what, found.step, found.tensor) == ("ranks", 1, "w")
    assert found.legacy.startswith("rank 0: ") and found.migrated.startswith("rank 1: ")
    assert "do not average their gradients" in found.cause and "step 1 (rank 1 against rank 0)" in found.cause


def _finished(name, returncode, stderr="", stdout="", nproc=1):
    from pathlib import Path

    from neuron_migrate.verify.sides import Finished, Side

    side = Side(name, "/venv/bin/python", Path("/project/train.py"), [], Path("/tmp/records"), {}, nproc=nproc)
    return Finished(side, ["python", "train.py"], returncode, 1.0, stdout, stderr)


def _error_of(done, record=None):
    from neuron_migrate.verify import runner
    from neuron_migrate.verify.sides import Options

    return runner._error(done, record or Record(0), Options(nproc=done.side.nproc))


def test_a_side_error_is_its_last_exception_without_torchruns_rank_prefix():
    stderr = "[rank0]: Traceback (most recent call last):\n[rank0]:   File \"x.py\"\n[rank0]: ValueError: bad shape\n"

    assert _error_of(_finished("migrated", 1, stderr)) == "ValueError: bad shape"
    assert _error_of(_finished("migrated", -9)) == "killed by signal 9"
    assert _error_of(_finished("migrated", 0)) == ""


def test_a_hub_error_says_the_side_needs_the_network_and_names_the_host():
    stderr = "OSError: We couldn't connect to 'https://huggingface.co' to load the files\n"

    error = _error_of(_finished("migrated", 1, stderr))

    assert error.startswith("needs the network (it tried huggingface.co): verify runs both sides offline")


def test_a_missing_module_on_the_legacy_side_asks_for_the_legacy_interpreter():
    error = _error_of(_finished("legacy", 1, "ModuleNotFoundError: No module named 'torch_xla'\n"))

    assert error == ("/venv/bin/python has no module 'torch_xla' "
                     "(pass --legacy-python: the interpreter of the legacy environment)")


def test_a_legacy_side_that_cannot_start_several_ranks_is_told_to_use_one():
    error = _error_of(_finished("legacy", 1, "RuntimeError: PJRT: no such device\n", nproc=2))

    assert error.startswith("could not start 2 ranks (RuntimeError: PJRT: no such device); torch_xla's PJRT CPU")
    assert "--legacy-nproc 1" in error and "--legacy-args" in error


def test_a_tensor_recorded_whole_names_its_first_different_value():
    ids = tensor(10.0, values=[1, 17, 42, 7], shape=(1, 4), dtype="int64")
    legacy = training_record()
    legacy.events[3]["tensors"] = [ids]
    migrated = copy.deepcopy(legacy)
    migrated.events[3]["tensors"][0]["values"] = [1, 17, 40, 7]

    first = compare(legacy, migrated, 1e-5).first

    assert (first.legacy, first.migrated) == ("42 at flat index 2", "40")


def test_a_batch_of_another_shape_points_at_padding_and_the_edits_that_set_shapes():
    migrated = changed(training_record(), "batch", 0, lambda e: e["tensors"][0].update(shape=[8, 6]))
    edits = [Edit("NM305", "generate.py", 12, "static input shapes: pad to 256 tokens", ["performance"])]

    d = explained(training_record(), migrated, edits=edits)

    assert (d.legacy, d.migrated) == ("shape (8, 4) float32", "shape (8, 6) float32")
    assert d.cause.startswith("the batch has another shape on each side: the programs pad or batch differently")
    assert d.edits == edits


def test_the_global_view_of_several_ranks_keeps_rank_0s_parameters_and_the_mean_loss():
    from neuron_migrate.verify.records import global_view

    ranks = {0: training_record(world=2, loss=2.0), 1: training_record(world=2, loss=3.0)}

    view = global_view(ranks)

    assert [e["value"] for e in view.of("loss")] == [2.5, 2.4, 2.3]
    assert not view.of("batch") and not view.of("output")
    assert view.of("params") == ranks[0].of("params")
    assert compare(global_view({0: training_record(loss=2.5)}), view, 1e-5).first is None


def test_paths_inside_an_exported_revision_are_named_by_the_revision(tmp_path):
    from neuron_migrate.verify.runner import _name_revision

    exported = tmp_path / "export"
    legacy, migrated = training_record(lr=0.1), training_record(lr=0.2)
    d = causes.explain(compare(legacy, migrated, 1e-5).first, legacy, migrated, {}, [])
    d.edits = [Edit("NM113", str(exported / "src" / "train.py"), 43, "xm.optimizer_step(opt) -> opt.step()")]
    result = _result(DIFFERENT, d)
    result.legacy.script = str(exported / "src" / "train.py")
    result.legacy.command = ["python", str(exported / "src" / "train.py"), "--epochs", "1"]

    _name_revision(result, exported, "git:HEAD~1")

    assert result.legacy.script == "git:HEAD~1:src/train.py"
    assert result.legacy.command == ["python", "git:HEAD~1:src/train.py", "--epochs", "1"]
    assert d.edits[0].path == "git:HEAD~1:src/train.py"


def test_a_loss_divergence_reads_as_one_number():
    migrated = changed(training_record(), "loss", 0, lambda e: e.update(value=2.5))
    d = explained(training_record(), migrated)

    assert verification_text.headline(d) == "step 0, loss: legacy 2, migrated 2.5, relative difference 2.00e-01"


def _schema():
    import jsonschema

    from conftest import ROOT

    package = ROOT / "neuron_migrate" / "report" / "verification.schema.json"
    schema = json.loads(package.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_every_outcome_matches_the_json_schema():
    legacy, migrated = training_record(lr=0.1), training_record(lr=0.2)
    d = causes.explain(compare(legacy, migrated, 1e-5).first, legacy, migrated, {}, [])
    d.edits = [Edit("NM113", "train.py", 43, "xm.optimizer_step(opt) -> opt.step()", ["collectives"])]
    failed = _result("failed")
    failed.migrated.error, failed.migrated.output_tail = "RuntimeError: boom", "Traceback\nRuntimeError: boom"
    validator = _schema()

    for result in (_result(), _result(DIFFERENT, d), failed):
        errors = sorted(validator.iter_errors(json.loads(json.dumps(result.to_dict()))), key=str)
        assert not errors, errors[0].message


def test_the_markdown_comment_puts_the_verdict_and_divergence_first_and_escapes_cells():
    from neuron_migrate.report import verification_md

    legacy, migrated = training_record(lr=0.1), training_record(lr=0.2)
    d = causes.explain(compare(legacy, migrated, 1e-5).first, legacy, migrated, {}, [])
    d.edits = [Edit("NM113", "train.py", 43, "a | b", ["collectives"])]
    result = _result(DIFFERENT, d, compare(legacy, migrated, 1e-5).rows)
    result.migrated.error, result.migrated.output_tail = "RuntimeError: boom", "Traceback\nRuntimeError: boom"

    text = verification_md.render(result)

    assert text.startswith("## neuron-migrate verify: different\n\nDifferent: the programs part at step 0, parameter w")
    assert text.index("**First divergence:**") < text.index("| step | legacy loss")
    assert "  - `train.py:43` NM113 a \\| b" in text
    assert "<details><summary>its last lines of output</summary>\n\n```\nTraceback\nRuntimeError: boom\n```" in text


def test_gradients_that_differ_while_every_parameter_agrees_are_rounding_not_a_divergence():
    migrated = changed(training_record(), "grads", 1, set_norm(0.5 * 1.03))

    comparison = compare(training_record(), migrated, 1e-5)

    assert comparison.first is None and all(row.equal for row in comparison.rows)
    assert comparison.gradient_noise == pytest.approx(0.03 / 1.03, rel=1e-6)


def test_a_tensor_that_is_zero_up_to_rounding_is_measured_against_the_whole_model():
    def record(bias):
        r = training_record()
        for event in r.of("params"):
            event["tensors"].append(tensor(bias, values=(bias / 2, -bias / 3), shape=(10,), name="bn.bias"))
        return r

    assert compare(record(3.7e-8), record(3.0e-8), 1e-5).first is None
    assert compare(record(0.37), record(0.30), 1e-5).first.tensor == "bn.bias"


def test_a_rewrite_report_gets_the_verification_as_its_last_section_once():
    page = "<body><header><h1>neuron-migrate report</h1></header><main><p>findings</p></main><footer/></body>"

    once = verification_html.embed(page, _result())
    twice = verification_html.embed(once, _result())

    assert once.index("<p>findings</p>") < once.index('<section id="verification">') < once.index("</main>")
    assert twice.count('<section id="verification">') == 1 and twice == once
    assert verification_html.embed("<html><main></main></html>", _result()) is None, "not a rewrite report"


def on_device(record, device):
    """``record`` as if every tensor it holds had been computed on ``device``."""
    record = copy.deepcopy(record)
    for event in record.events:
        if event["kind"] == "loss":
            event["device"] = device
        for entry in event.get("tensors", ()):
            entry["device"] = device
    return record


def test_a_migrated_side_with_no_tensor_on_neuron_ran_on_the_cpu(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import torch\n\ndevice = torch.device('neuron')\n", encoding="utf-8")
    record = training_record()

    on_cpu = causes.on_cpu([on_device(record, "cpu")], tmp_path, script)
    one_on_neuron = changed(on_device(record, "cpu"), "output", 1, lambda e: e["tensors"][0].update(device="neuron"))

    assert on_cpu is not None and on_cpu.what == "device" and on_cpu.migrated == "cpu"
    assert on_cpu.cause.startswith("the migrated program ran on the CPU: none of its 13 recorded tensors was on neuron")
    assert on_cpu.at == "", "the source chose no CPU device"
    assert causes.on_cpu([on_device(record, "neuron")], tmp_path, script) is None
    assert causes.on_cpu([one_on_neuron], tmp_path, script) is None, "one tensor on the device is a device run"
    assert causes.on_cpu([Record(0, [{"kind": "start", "step": 0}])], tmp_path, script) is None, "nothing recorded"


def test_batches_on_the_host_do_not_count_as_a_cpu_run(tmp_path):
    record = on_device(training_record(), "neuron")
    for event in record.of("batch"):
        event["tensors"][0]["device"] = "cpu"  # a DataLoader's batch before it is moved

    assert causes.on_cpu([record], tmp_path, tmp_path / "train.py") is None


@pytest.mark.parametrize("source, line, handled", [
    # the fallback of a guarded import, in a helper
    ("import torch\n\ndef pick():\n    try:\n        import torch_neuronx  # noqa\n    except ImportError:\n"
     "        return torch.device('cpu')\n    return torch.device('neuron')\n", 7, True),
    # a module-level guard assigning a string, with an unrelated .to('cpu') above it
    ("import torch\nx = torch.ones(1).to('cpu')\ntry:\n    import torch_neuronx\n    DEVICE = 'neuron'\n"
     "except (ImportError, RuntimeError):\n    DEVICE = 'cpu'\n", 7, True),
    # a conditional expression: the CPU is its else
    ("import torch, os\ndevice = torch.device('neuron' if os.environ.get('USE_NEURON') else 'cpu')\n", 2, False),
    # an if/else choice
    ("import torch\nif torch.neuron.is_available():\n    dev = 'neuron'\nelse:\n    dev = 'cpu'\n", 5, False),
])
def test_the_line_that_chose_the_cpu_is_found(tmp_path, source, line, handled):
    script = tmp_path / "train.py"
    script.write_text(source, encoding="utf-8")

    path, found, code, in_handler = causes.cpu_fallback(tmp_path, script)

    assert (path, found, in_handler) == (str(script), line, handled), code


def test_a_cpu_fallback_in_a_module_of_the_project_is_found(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("from utils import pick\nimport torch\ncheckpoint = torch.load('x', map_location='cpu')\n",
                      encoding="utf-8")
    (tmp_path / "utils.py").write_text(
        "import torch\n\ndef pick():\n    try:\n        import torch_neuronx\n        return torch.device('neuron')\n"
        "    except ImportError:\n        return torch.device('cpu')\n", encoding="utf-8")

    path, line, code, handled = causes.cpu_fallback(tmp_path, script)

    assert (path, line, handled) == (str(tmp_path / "utils.py"), 8, True)
    assert code == "return torch.device('cpu')"


def test_a_run_on_the_cpu_is_said_in_every_report_and_fits_the_schema(tmp_path):
    from neuron_migrate.report import verification_md

    script = tmp_path / "train.py"
    script.write_text("import torch\ntry:\n    import torch_neuronx\nexcept ImportError:\n    d = 'cpu'\n",
                      encoding="utf-8")
    result = _result(DIFFERENT, causes.on_cpu([on_device(training_record(), "cpu")], tmp_path, script))

    text, page = verification_text.render(result), verification_html.render(result)

    verdict = "verify: different: the migrated program ran on the CPU, not on the neuron device"
    assert text.endswith(verdict + "\n")
    assert "first divergence: the migrated program computed on cpu, not on the neuron device" in text
    assert f"  at: {script}:5" in text and "the except handler that chose it: d = 'cpu'" in text
    assert "ran on the CPU, not on the neuron device" in verification_md.render(result)
    assert "the migrated program computed on cpu" in page
    assert not list(_schema().iter_errors(json.loads(json.dumps(result.to_dict()))))


def adam_record(bias_grad, bias_after, steps=2):
    """Two tensors, a weight and a bias whose gradient is ``bias_grad``, and the bias after each step."""
    record = training_record(steps)
    for event in record.events:
        if event["kind"] == "grads":
            event["tensors"].append(tensor(bias_grad, values=(bias_grad / 2, -bias_grad / 3), shape=(4,), name="b"))
        elif event["kind"] == "params" and event.get("when") == "after":
            event["tensors"].append(tensor(abs(bias_after), values=(bias_after / 2, bias_after / 5), shape=(4,),
                                           name="b"))
        elif event["kind"] == "params":
            event["tensors"].append(tensor(0.0, values=(0.0, 0.0), shape=(4,), name="b"))
    return record


def test_parameters_whose_gradient_is_rounding_residue_are_left_out_after_the_step():
    # a bias before a batch norm: gradients of 1e-8 with another sign on each side, which Adam makes updates of
    legacy, migrated = adam_record(1e-8, 1e-4), adam_record(-1.2e-8, -1e-4)

    comparison = compare(legacy, migrated, 1e-5)

    assert comparison.first is None and all(row.equal for row in comparison.rows)
    assert comparison.residue == {"b"}


def test_a_parameter_with_a_real_gradient_that_parts_is_still_found():
    legacy, migrated = adam_record(1e-2, 1e-1), adam_record(1e-2, -1e-1)

    comparison = compare(legacy, migrated, 1e-5)

    assert comparison.first is not None and comparison.first.what == "parameter" and comparison.first.tensor == "b"
    assert comparison.residue == set()


def test_a_tiny_gradient_that_agrees_is_no_residue():
    # small but the same on both sides: the update it makes is the same too, and is compared
    legacy, migrated = adam_record(1e-8, 1e-4), adam_record(1e-8, -1e-4)

    comparison = compare(legacy, migrated, 1e-5)

    assert comparison.residue == set() and comparison.first is not None and comparison.first.tensor == "b"
