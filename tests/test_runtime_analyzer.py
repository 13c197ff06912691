"""The runtime analyzer: scripts in fixtures/runtime/ with planted hazards are reported at the right line with the
right rule; a clean static-shape script reports nothing; watch() works as a context manager in a test too."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from neuron_migrate.analyzers.hazards import HAZARDS, audit_fingerprint
from neuron_migrate.analyzers.runtime import analyze_script, watch
from neuron_migrate.analyzers.runtime.buckets import Bucket, graphs_after, suggest_bucket
from neuron_migrate.analyzers.runtime.reasons import plain, split_failures
from neuron_migrate.analyzers.runtime.script import parse_fallback_ops
from neuron_migrate.analyzers.runtime.twins import break_twin, refine

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "fixtures" / "runtime"


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch):
    monkeypatch.chdir(ROOT)  # finding paths are relative to the working directory


def line_of(name: str, marker: str) -> int:
    lines = (SCRIPTS / name).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text)


def run(name: str, **kwargs):
    result = analyze_script(str(SCRIPTS / name), **kwargs)
    assert result.exit_code == 0, result.notes
    return result


def at(result, rule: str, line: int):
    found = [f for f in result.findings if f.rule == rule and f.span.line == line]
    assert found, f"no {rule} at line {line}: {[(f.rule, f.span.line, f.message) for f in result.findings]}"
    return found[0]


# ----- the bucket arithmetic -----
@pytest.mark.parametrize(
    ("sizes", "expected"),
    [
        ([7, 12, 20, 25, 33, 40], Bucket(32, None, 2, 6)),  # 32 and 64
        ([10, 20, 30], Bucket(16, None, 2, 3)),  # 16 and 32
        ([100, 200, 300, 1000], Bucket(512, None, 2, 4)),
        ([3, 5, 6], Bucket(None, 8, 1, 3)),  # the smallest multiple covers all: one fixed length
        ([9, 17, 30, 31], Bucket(16, None, 2, 4)),  # 16 and 32
        ([7, 12], None),  # two sizes: padding cannot do better than two graphs
        ([16, 16, 16], None),
    ],
)
def test_suggest_bucket(sizes, expected):
    assert suggest_bucket(sizes) == expected


def test_bucket_padding_and_graph_count():
    bucket = suggest_bucket([7, 12, 20, 25, 33, 40])
    assert [bucket.pad(s) for s in (7, 32, 33, 40)] == [32, 32, 64, 64]
    assert bucket.describe() == "pad to a multiple of 32"
    assert Bucket(None, 8, 1, 3).describe() == "pad to a fixed length of 8"
    # (batch, length) signatures: only the length is bucketed
    signatures = [(4, 7), (4, 12), (4, 20), (2, 40)]
    assert graphs_after(signatures, {1: bucket}) == 2


# ----- guard failures in plain words -----
@pytest.mark.parametrize(
    ("failure", "new", "expected"),
    [
        ("tensor 'x' size mismatch at index 1. expected 7, actual 12", {}, "input `x` changed shape in dim 1 (7 -> 12)"),
        ("tensor 'x' dtype mismatch. expected Float, actual Double", {}, "input `x` changed dtype (float32 -> float64)"),
        ("n == 1                # y = x * n  # f.py:3 in f", {"n": 2},
         "Python value `n` was compiled in as a constant (1 -> 2)"),
        ("n == 1                # y = x * n  # f.py:3 in f", {}, "Python value `n` was compiled in as a constant (compiled for 1)"),
        ("tensor 'L['x']' rank mismatch. expected 2, actual 3", {}, "input `x` changed its number of dimensions (2 -> 3)"),
        ("tensor 'x' requires_grad mismatch. expected requires_grad=0", {}, "input `x` changed requires_grad (False -> True)"),
        ("GLOBAL_STATE changed: grad_mode ", {}, "autograd mode changed (a call under torch.no_grad() or inference_mode())"),
        ("fn._modules['1'].training == True   # return F.dropout(...)", {}, "module `1` switched between train() and eval() (compiled with training=True)"),
        ("len(L['items']) == 2", {}, "the length of `items` changed (compiled for 2)"),
    ],
)
def test_plain_reasons(failure, new, expected):
    assert plain(failure, new).text() == expected


def test_split_failures_of_a_recompile_log_record():
    record = textwrap.dedent("""\
        Recompiling function f in /tmp/f.py:10
            triggered by the following guard failure(s):
            - 0/1: n == 1                                 # return x * n  # f.py:11 in f
            - User stack trace:
            -   File "/tmp/f.py", line 11, in f
            - 0/0: tensor 'x' size mismatch at index 1. expected 3, actual 5""")
    failures = split_failures(record)
    assert [entry for entry, _ in failures] == ["0/1", "0/0"]
    assert failures[1][1] == "tensor 'x' size mismatch at index 1. expected 3, actual 5"


def test_static_twins_follow_the_users_line():
    assert refine("NA203", "idx = torch.where(mask)") == "NA206"
    assert refine("NA203", "idx = torch.argwhere(mask)") == "NA203"
    assert refine("NA201", "if loss > 0:") == "NA208"
    assert refine("NA201", "print(loss)") == "NA209"
    assert refine("NA201", "total += loss.item()") == "NA201"
    assert break_twin("Operator `aten.nonzero.default`'s output ... BINARY_SUBSCR", "y = x[x > 0]") == "NA205"
    assert break_twin("Unsupported call to some builtin", "y = f(x)") is None


def test_fallback_ops_in_any_shape():
    assert parse_fallback_ops(["aten::foo.Tensor=3", "aten.bar.default", "aten::foo.Tensor=2"]) == [
        ("aten::foo.Tensor", 5), ("aten::bar.default", None)]
    assert parse_fallback_ops({"aten::baz": 4}) == [("aten::baz", 4)]
    assert parse_fallback_ops(None) == []


# ----- scripts with planted hazards -----
def test_varying_sequence_lengths_recompile_and_suggest_a_bucket():
    result = run("varying_lengths.py")
    line = line_of("varying_lengths.py", "RECOMPILES HERE")
    recompile = at(result, "NA501", line)
    assert "recompiled 5 times" in recompile.message
    assert "input `input_ids` changed shape in dim 1 (7 -> 12, 12 -> 20" in recompile.message
    shapes = at(result, "NA503", line)
    assert "6 sequence lengths of `input_ids` between 7 and 40 -> pad to a multiple of 32: 2 graphs instead of 6" \
        in shapes.message
    assert "pad_to_multiple_of=32" in shapes.fix
    assert {f.rule for f in result.findings} == {"NA501", "NA503"}
    assert result.summary.recompiles == 5 and result.summary.graphs == 6
    for finding in result.findings:
        assert finding.evidence == "runtime" and not finding.applied
        assert finding.path == "fixtures/runtime/varying_lengths.py"
        assert finding.fingerprint == audit_fingerprint(finding.rule, finding.path, finding.before)
        assert finding.severity == HAZARDS[finding.rule].severity


def test_item_and_tensor_branch_inside_a_compiled_function():
    result = run("item_branch.py")
    item = line_of("item_branch.py", "# ITEM")
    branch = line_of("item_branch.py", "DATA-DEPENDENT BRANCH")
    assert "Tensor.item()" in at(result, "NA502", item).message
    assert "data-dependent branching" in at(result, "NA502", branch).message
    assert "graph break" in at(result, "NA201", item).message
    assert "graph break" in at(result, "NA208", branch).message
    assert not [f for f in result.findings if f.rule == "NA501"]  # one call: nothing recompiled
    assert result.summary.graph_breaks == 2


def test_nonzero_and_boolean_mask_in_eager_code():
    result = run("masks.py")
    assert "aten::nonzero" in at(result, "NA203", line_of("masks.py", "# NONZERO")).message
    assert "aten::index" in at(result, "NA205", line_of("masks.py", "# BOOLEAN MASK")).message
    # the recorder stops after the first forward call: counts are per step
    assert "ran 1 time in the first 1 forward call" in at(result, "NA203", line_of("masks.py", "# NONZERO")).message
    assert result.summary.steps_recorded == 1


def test_custom_op():
    result = run("custom_op.py")
    finding = at(result, "NA505", line_of("custom_op.py", "# CUSTOM OP"))
    assert "nmfixture::scaled_gelu" in finding.message


def test_dtype_change_recompiles():
    result = run("dtype_change.py")
    finding = at(result, "NA501", line_of("dtype_change.py", "# CALL"))
    assert "input `x` changed dtype (float32 -> float64)" in finding.message


def test_batch_size_change_on_the_emulated_neuron_device(neuron_emulator):
    result = run("neuron_batch.py")
    assert result.emulated and "emulated" in result.device
    finding = at(result, "NA501", line_of("neuron_batch.py", "# CALL"))
    assert "changed shape in dim 0 (4 -> 3)" in finding.message
    assert any("emulated on CPU" in note for note in result.notes)


def test_a_clean_static_shape_training_script_reports_nothing():
    result = run("clean_static.py")
    assert result.findings == []
    assert result.report.findings == [] and result.report.mode == "audit"
    assert result.summary.graphs >= 1 and result.summary.recompiles == 0 and result.summary.graph_breaks == 0
    assert result.summary.steps_recorded == 1 and result.summary.step_unit == "optimizer step"


def test_exit_status_and_failures_of_the_script(tmp_path):
    exits = tmp_path / "exits.py"
    exits.write_text("import sys\nassert sys.argv[1:] == ['--flag', 'x']\nsys.exit(3)\n")
    assert analyze_script(str(exits), ["--flag", "x"], emulate=False).exit_code == 3
    crashes = tmp_path / "crashes.py"
    crashes.write_text("raise ValueError('boom')\n")
    result = analyze_script(str(crashes), emulate=False)
    assert result.exit_code == 1 and any("ValueError: boom" in note for note in result.notes)
    assert sys.argv[0] != str(crashes)


def test_a_script_outside_torchrun_runs_as_one_torchrun_process(tmp_path, monkeypatch):
    script = tmp_path / "ddp.py"
    script.write_text(
        "import os, sys\nimport torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "ok = (dist.get_rank(), dist.get_world_size(), os.environ['LOCAL_RANK']) == (0, 1, '0')\n"
        "dist.destroy_process_group()\nsys.exit(0 if ok else 5)\n"
    )
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    result = analyze_script(str(script), emulate=False)
    assert result.exit_code == 0, result.notes
    assert any("one torchrun process" in note for note in result.notes)
    assert "RANK" not in __import__("os").environ  # put back as it was
    # Launched by torchrun already: its environment is left alone.
    monkeypatch.setenv("RANK", "3")
    plain = tmp_path / "plain.py"
    plain.write_text("import os, sys\nsys.exit(0 if os.environ['RANK'] == '3' else 5)\n")
    result = analyze_script(str(plain), emulate=False)
    assert result.exit_code == 0 and not any("torchrun" in note for note in result.notes)


# ----- watch() used directly -----
def scale(x, factor):
    return x * factor


def test_watch_as_a_context_manager():
    import torch._dynamo

    before = torch._dynamo.config.automatic_dynamic_shapes
    compiled = torch.compile(scale, backend="eager")
    with watch(steps=1) as w:
        assert torch._dynamo.config.automatic_dynamic_shapes is False
        for n in (3, 5):
            compiled(torch.ones(n), 2)  # WATCHED CALL
    assert torch._dynamo.config.automatic_dynamic_shapes == before
    path = "tests/test_runtime_analyzer.py"
    line = next(i for i, text in enumerate(Path(path).read_text().splitlines(), 1) if "# WATCHED CALL" in text
                and "next(" not in text)
    findings = w.findings()
    assert [(f.rule, f.path, f.span.line) for f in findings] == [("NA501", path, line)]
    assert "input `x` changed shape in dim 0 (3 -> 5)" in findings[0].message
    report = w.report(command="pytest")
    assert report.mode == "audit" and [fr.path for fr in report.files] == [path]
    assert report.rules["NA501"]["title"] == HAZARDS["NA501"].title
    assert w.summary().recompiles == 1
