"""Shell scripts: byte fidelity, bash that bashlex refuses, bad input, the example projects' launch
scripts, and agreement with the Python environment-variable rules.

The fixtures under ``fixtures/shell/`` are run by ``test_rule_fixtures.py``. A fixture is rewritten under
its own path, so a launched script next to it (``finetune.py``) is read as it would be in a project.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from conftest import ROOT

from neuron_migrate.config import load_config
from neuron_migrate.migrate.engine import RulePlan
from neuron_migrate.migrate.requirements import rewrite_requirements
from neuron_migrate.migrate.runner import run
from neuron_migrate.migrate.shell import ShellScript, migrate_shell_text, rewrite_shell
from neuron_migrate.report.model import CHANGED, FAILED, UNCHANGED
from neuron_migrate.rules.env_vars import ENV_VARS
from neuron_migrate.rules.launch_scripts import ASYNC_LOAD, COMPILE_FLAGS, launch_of
from neuron_migrate.rules.requirements import PACKAGES

BASH = shutil.which("bash")


def shell(text: str, plan, path: str = "run.sh", **kwargs) -> str:
    return migrate_shell_text(text, path, plan, **kwargs).text


def parses(text: str) -> bool:
    """``bash -n``: the script is syntactically valid (True when there is no bash to ask)."""
    if BASH is None:
        return True
    return subprocess.run([BASH, "-n"], check=False, input=text.encode(), capture_output=True).returncode == 0


# ----- bytes in, bytes out -----------------------------------------------------------------------------------

MIXED = (
    "#!/usr/bin/env bash\n"
    "export PJRT_DEVICE=NEURON\n"
    "export XLA_USE_BF16=1\n"
    "neuron_parallel_compile torchrun train.py --output_dir out \\\n"
    "    --tensor_parallel_size 2\n"
)


def test_crlf_files_keep_their_line_endings(plan):
    lf = rewrite_shell(MIXED.encode(), "run.sh", plan, False)
    crlf = rewrite_shell(MIXED.replace("\n", "\r\n").encode(), "run.sh", plan, False)
    assert crlf.status == CHANGED
    assert crlf.output == lf.output.replace(b"\n", b"\r\n")
    assert b"\n" not in crlf.output.replace(b"\r\n", b"")
    assert rewrite_shell(crlf.output, "run.sh", plan, False).status == UNCHANGED


def test_bom_and_missing_final_newline_are_kept(plan):
    data = "\ufeffecho start\nexport PJRT_DEVICE=NEURON".encode()
    outcome = rewrite_shell(data, "run.sh", plan, False)
    assert outcome.output == "\ufeffecho start".encode()
    marked = rewrite_shell(b"echo start\nexport XLA_USE_BF16=1", "run.sh", plan, False).output
    assert marked.startswith(b"echo start\n# TODO(neuron-migrate NM502): deleted XLA_USE_BF16")
    assert marked.count(b"\n") == 1 and b"export" not in marked  # the marker takes the last line's place


def test_a_heredoc_is_migrated_as_what_reads_it(plan):
    script = (
        "cat <<EOF > launch.sh\n"
        "export PJRT_DEVICE=NEURON\n"
        "torchrun train.py --tensor_parallel_size \\$TP --output_dir o\n"
        "EOF\n"
        "cat <<-'END' | ssh host bash\n"
        "\texport XLA_IR_DEBUG=1\n"
        "\tneuron_parallel_compile python x.py\n"
        "\tEND\n"
        'python - <<"PY"\n'
        "import os; os.environ['PJRT_DEVICE'] = 'NEURON'\n"
        "PY\n"
        "cat <<EOF\n"
        "usage: XLA_IR_DEBUG=1 ./run.sh\n"
        "EOF\n"
    )
    result = migrate_shell_text(script, "run.sh", plan)
    lines = result.text.splitlines()
    # A script written to a file: migrated inside; its markers are escaped, since the heredoc expands.
    assert lines[:2] == ["cat <<EOF > launch.sh", f"export {ASYNC_LOAD}=1"]
    assert lines[2].startswith("# neuron-migrate(NM512): \\`--tensor_parallel_size \\$TP\\`: tensor parallelism")
    assert "export PJRT_DEVICE" not in result.text and "\tpython x.py" in lines
    # A quoted one is written as it is: its marker is not escaped.
    assert "\t# neuron-migrate(NM510): neuron_parallel_compile removed" in result.text
    # Python and printed text: the first gets a TODO above its command, the second is a message.
    todo = next(line for line in lines if "NM519" in line)
    assert "Python" in todo and "PJRT_DEVICE" in todo and lines[lines.index(todo) + 1] == 'python - <<"PY"'
    assert result.text.endswith("cat <<EOF\nusage: XLA_IR_DEBUG=1 ./run.sh\nEOF\n")
    assert [f.span.line for f in result.findings if f.rule == "NM501"] == [2, 6]
    assert migrate_shell_text(result.text, "run.sh", plan).text == result.text
    assert parses(result.text)


def test_comments_quotes_functions_and_substitutions_survive(plan):
    script = (
        "#!/bin/bash\n"
        "# neuron_parallel_compile in a comment, it's fine\n"
        'log() { echo "[$(date +%T)] $*" >&2; }  # a function\n'
        "FILES=( 'a b' \"c d\" $(ls) )\n"
        "x=$(( ${#FILES[@]} + 1 ))\n"
        "[[ -n \"${x}\" ]] && log 'neuron_parallel_compile torchrun'\n"
        "out=$(neuron_parallel_compile torchrun train.py --epochs 1)\n"
    )
    result = shell(script, plan)
    assert result == script.replace("out=$(neuron_parallel_compile ", "out=$(").replace(
        "out=", "# neuron-migrate(NM510): " + _marker(result, "NM510") + "\nout=", 1
    )
    assert parses(result)


def _marker(text: str, rule: str) -> str:
    return re.search(rf"# neuron-migrate\({rule}\): (.*)", text).group(1)


# ----- what bashlex refuses ----------------------------------------------------------------------------------


def test_case_arms_are_migrated_line_by_line(plan):
    script = (
        'case "$1" in\n'
        "  pre) neuron_parallel_compile torchrun train.py ;;\n"
        "  bf16|all)\n"
        "    export PJRT_DEVICE=NEURON\n"
        "    ;;\n"
        "esac\n"
    )
    result = migrate_shell_text(script, "run.sh", plan)
    assert "  pre) torchrun train.py ;;\n" in result.text
    assert "  bf16|all)\n    :\n    ;;\n" in result.text  # the deleted export leaves a no-op
    assert sorted(f.rule for f in result.findings) == ["NM501", "NM510"]
    assert parses(result.text)


def test_block_headers_are_read_and_never_reported_as_unreadable(plan):
    script = (
        'if [ "$NEURON_EXTRACT_GRAPHS_ONLY" = "1" ]; then\n'
        "    steps=10\n"
        'elif [ -v PERF ] && [ "$PERF" -gt 0 ]; then\n'
        "    steps=100\n"
        "fi\n"
        "for h in $(hosts); do\n"
        "    XLA_IR_DEBUG=1 ssh $h true\n"
        "done\n"
        "start() {\n"
        "    export PJRT_DEVICE=NEURON\n"
        "}\n"
    )
    parsed = ShellScript(script, "run.sh")
    assert parsed.refused == []
    assert [c.words[0].value for c in parsed.commands if c.words][:3] == ["[", "[", "["]
    result = migrate_shell_text(script, "run.sh", plan)
    assert "NM519" not in result.text
    assert "    ssh $h true\n" in result.text and "start() {\n    :\n}\n" in result.text
    # The test of a variable nothing sets any more gets a TODO: it is always empty now.
    assert result.text.startswith("# TODO(neuron-migrate NM501): reads $NEURON_EXTRACT_GRAPHS_ONLY, which nothing")
    assert sorted((f.rule, f.applied) for f in result.findings) == [("NM501", False), ("NM501", True), ("NM501", True)]
    assert parses(result.text)


def test_lines_bashlex_refuses_are_kept_and_reported_when_they_name_legacy_apis(plan):
    script = (
        'HERE=$(cd "$(dirname "$0")" && pwd); export PJRT_DEVICE=NEURON\n'
        'HERE=$(cd "$(dirname "$0")" && pwd); echo "$HERE"\n'
        "export PJRT_DEVICE=NEURON\n"
    )
    result = migrate_shell_text(script, "run.sh", plan)
    # The first line stays byte for byte, with a TODO naming what it holds; the second names
    # nothing legacy and is not reported; the third is migrated as usual.
    lines = result.text.splitlines(keepends=True)
    assert lines[0].startswith("# TODO(neuron-migrate NM519):") and "PJRT_DEVICE" in lines[0]
    assert lines[1:] == script.splitlines(keepends=True)[:2]
    assert [(f.rule, f.span.line, f.applied) for f in result.findings] == [("NM501", 3, True), ("NM519", 1, False)]
    assert migrate_shell_text(result.text, "run.sh", plan).text == result.text


def test_a_file_bashlex_cannot_parse_at_all_is_untouched(plan):
    script = 'HERE=$(cd "$(dirname "$0")" && pwd)\n'
    outcome = rewrite_shell(script.encode(), "run.sh", plan, False)
    assert outcome.status == UNCHANGED and outcome.findings == []
    assert ShellScript(script, "run.sh").refused


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        "   ",
        "echo 'never closed\nexport PJRT_DEVICE=NEURON\n",
        'export PJRT_DEVICE=NEURON\necho "never closed\nneuron_parallel_compile torchrun x.py\n',
        "cat <<EOF\nexport PJRT_DEVICE=NEURON\n",
        'ARGS=(\n  --tensor_parallel_size 2\ntorchrun x.py "${ARGS[@]}"\n',
        "x=$(\n",
        "\\",
        "export PJRT_DEVICE=NEURON \\",
        "))))((((\n",
        "}}}{{{ fi done esac then\n",
        "echo $(( 1 +\n2 ))\nexport PJRT_DEVICE=NEURON\n",
        "a" * 100_000 + "\nexport PJRT_DEVICE=NEURON\n",
        "$(" * 300 + "\n",
        "\x00\x01 export PJRT_DEVICE=NEURON\n",
        "echo ${x:-'a)'} $'it\\'s' \"${y//\\\"/}\"\nexport PJRT_DEVICE=NEURON\n",
        "f() (\n  neuron_parallel_compile torchrun x.py\n)\n",
        "<<<",
        "cat <<",
        "\x0c\u00a0\u2028 export PJRT_DEVICE=NEURON\n\x0bneuron_parallel_compile torchrun x.py\n",
        "export PJRT_DEVICE=NEURON\r",
        "\r\n\r\nexport PJRT_DEVICE=NEURON\r\n\r\n",
    ],
)
def test_odd_input_never_raises_and_stays_valid(text, plan):
    outcome = rewrite_shell(text.encode(), "run.sh", plan, False)
    assert outcome.status in (CHANGED, UNCHANGED), outcome.error
    if outcome.status == CHANGED:
        new = outcome.output.decode()
        if parses(text):
            assert parses(new)
        assert rewrite_shell(outcome.output, "run.sh", plan, False).status == UNCHANGED


def test_undecodable_bytes_fail_with_a_location(plan):
    outcome = rewrite_shell(b"export PJRT_DEVICE=NEURON\necho \xff\n", "run.sh", plan, False)
    assert outcome.status == FAILED and outcome.error.startswith("2:6: byte 0xff")


def test_an_internal_error_fails_only_that_file(plan, monkeypatch):
    from neuron_migrate.rules.launch_scripts import dispatch  # where the shell hook calls it

    def boom(*args):
        raise RuntimeError("bug")

    monkeypatch.setattr(dispatch, "apply_env_table", boom)
    outcome = rewrite_shell(b"export PJRT_DEVICE=NEURON\n", "run.sh", plan, False)
    assert outcome.status == FAILED and "internal error" in outcome.error and "bug" in outcome.error


# ----- markers, suppression, selection -----------------------------------------------------------------------


def test_no_comments_keeps_markers_out_of_the_file(plan):
    result = migrate_shell_text(MIXED, "run.sh", plan, no_comments=True)
    assert "neuron-migrate" not in result.text
    assert "neuron_parallel_compile" not in result.text and "PJRT_DEVICE" not in result.text
    assert {"NM501", "NM502", "NM510", "NM512"} <= {f.rule for f in result.findings}


def test_markers_are_not_added_twice(plan):
    once = shell(MIXED, plan)
    assert shell(once, plan) == once
    assert once.count("TODO(neuron-migrate NM502)") == 1


def test_suppression_comments(plan):
    script = (
        "export PJRT_DEVICE=NEURON  # neuron-migrate: ignore\n"
        "export XLA_IR_DEBUG=1  # neuron-migrate: ignore[NM502]\n"
        "torchrun t.py --output_dir o \\\n"
        "    --zero_1 true  # neuron-migrate: ignore[NM512]\n"
    )
    result = migrate_shell_text(script, "run.sh", plan)
    assert result.text == (
        "export PJRT_DEVICE=NEURON  # neuron-migrate: ignore\n"
        f"export {ASYNC_LOAD}=1\n"
        "torchrun t.py --output_dir o \\\n"
        "    --zero_1 true  # neuron-migrate: ignore[NM512]\n"
    )
    suppressed = {(f.rule, f.span.line) for f in result.findings if f.suppressed}
    assert suppressed == {("NM501", 1), ("NM512", 4)}


def test_only_selected_rules_apply():
    only_wrapper = RulePlan.build(select=["NM510"])
    result = migrate_shell_text(MIXED, "run.sh", only_wrapper)
    assert {f.rule for f in result.findings} == {"NM510"}
    assert "export PJRT_DEVICE=NEURON" in result.text and "--tensor_parallel_size 2" in result.text
    no_env = RulePlan.build(ignore=["NM50"])
    assert "export PJRT_DEVICE=NEURON" in shell(MIXED, no_env)


def test_findings_carry_the_cell_and_positions(plan):
    result = migrate_shell_text("echo hi\nexport   PJRT_DEVICE=NEURON\n", "nb.ipynb", plan, cell=3)
    (finding,) = result.findings
    assert (finding.cell, finding.span.line, finding.span.column, finding.span.end_column) == (3, 2, 10, 28)
    assert finding.path == "nb.ipynb" and finding.fingerprint


# ----- the rules' finer points -------------------------------------------------------------------------------


def test_a_renamed_variable_is_renamed_where_it_is_read(plan):
    script = 'export NEURON_COMPILE_CACHE_URL=/fsx/c\nls "$NEURON_COMPILE_CACHE_URL" ${NEURON_COMPILE_CACHE_URL}/x\n'
    result = shell(script, plan)
    assert 'ls "$TORCH_NEURONX_NEFF_CACHE_DIR" ${TORCH_NEURONX_NEFF_CACHE_DIR}/x' in result
    assert "NEURON_COMPILE_CACHE_URL=" not in result


def test_a_deletion_joined_to_another_command_becomes_a_todo(plan):
    script = "export PJRT_DEVICE=NEURON && torchrun x.py\n"
    result = migrate_shell_text(script, "run.sh", plan)
    assert result.text.endswith(script) and "TODO(neuron-migrate NM501)" in result.text
    assert [f.safety for f in result.findings] == ["manual"]


def test_a_block_left_empty_keeps_a_no_op(plan):
    result = shell("if true; then\n    export PJRT_DEVICE=NEURON\nfi\n", plan)
    assert result == "if true; then\n    :\nfi\n" and parses(result)


def test_an_array_read_by_position_is_not_edited(plan):
    script = 'L=(neuron_parallel_compile torchrun)\n"${L[@]:1}" x.py\n'
    result = migrate_shell_text(script, "run.sh", plan)
    assert result.text.endswith(script)
    assert [(f.rule, f.safety) for f in result.findings] == [("NM510", "manual")]


def test_hugging_face_jobs_are_recognised_from_the_script(tmp_path, plan):
    (tmp_path / "sft.py").write_text("import trl\n")
    (tmp_path / "plain.py").write_text("import torch\n")
    (tmp_path / "nxd.py").write_text("from transformers import LlamaConfig\nparser.add_argument('--zero_1')\n")
    run_sh = str(tmp_path / "run.sh")
    assert f"export {ASYNC_LOAD}=1" in shell("python sft.py\n", plan, run_sh)
    assert shell("python plain.py --epochs 1\n", plan, run_sh) == "python plain.py --epochs 1\n"
    # Trainer flags make it a Hugging Face job even when the script is not there to read.
    assert f"export {ASYNC_LOAD}=1" in shell("python missing.py --output_dir o\n", plan, run_sh)
    # A flag the script defines itself is its own, not NeuronTrainingArguments'.
    assert "--zero_1 true" in shell("torchrun nxd.py --zero_1 true\n", plan, run_sh)
    assert COMPILE_FLAGS in shell("torchrun sft.py --zero_1 true\n", plan, run_sh)


def test_launches_through_variables_and_wrappers(plan):
    script = (
        'LAUNCHER="torchrun --nproc_per_node 2"\n'
        "ARGS=(--output_dir o --fuse_qkv)\n"
        '$LAUNCHER train.py "${ARGS[@]}"\n'
        "nohup env OMP_NUM_THREADS=4 python -m torch.distributed.run --nproc_per_node=2 other.py --zero_1 --output_dir o &\n"
    )
    result = shell(script, plan)
    assert "ARGS=(--output_dir o --torch_compile true --torch_compile_backend neuron)" in result
    assert f"--nproc_per_node=2 other.py {COMPILE_FLAGS} --output_dir o &" in result
    assert result.index(f"export {ASYNC_LOAD}=1") < result.index("$LAUNCHER")


def test_async_load_is_not_added_when_the_script_sets_it(plan):
    script = "export HF_DEACTIVATE_ASYNC_LOAD=0\ntorchrun t.py --output_dir o\n"
    assert shell(script, plan) == script


# ----- shell and Python agree about every variable -----------------------------------------------------------


def _samples(key: str) -> list[tuple[str, str]]:
    name = key.rstrip("*") + ("SAMPLE" if key.endswith("*") else "")
    action = ENV_VARS[key]
    if action.drop_flags:
        values = [
            "--model-type=transformer --cache_dir=/tmp/c --retry_failed_compilation",
            "--retry_failed_compilation",
        ]
    elif action.remote_message:
        values = ["/fsx/cache", "s3://bucket/cache"]
    else:
        values = ["1"]
    return [(name, value) for value in values]


def _outcome(text: str, findings, setting: str) -> tuple:
    kept = re.search(setting, text)
    markers = sorted(line.strip() for line in text.splitlines() if "neuron-migrate" in line)
    decisions = sorted((f.rule, f.safety, f.applied) for f in findings)
    return (kept.groups() if kept else None, markers, decisions)


@pytest.mark.parametrize("key", sorted(ENV_VARS), ids=str)
def test_shell_and_python_decide_every_variable_alike(key, plan, migrate):
    for name, value in _samples(key):
        python = migrate(f'import os\n\nos.environ["{name}"] = "{value}"\n')
        shell_result = migrate_shell_text(f'export {name}="{value}"\n', "run.sh", plan)
        assert _outcome(shell_result.text, shell_result.findings, r'export (\w+)="([^"]*)"') == _outcome(
            python.code, python.findings, r'os\.environ\["(\w+)"\] = "([^"]*)"'
        ), (name, value)


# ----- the example projects ----------------------------------------------------------------------------------


@pytest.fixture
def examples(tmp_path):
    for name in ("xla-training", "optimum-sft", "optimum-inference"):
        shutil.copytree(ROOT / "examples" / name, tmp_path / name)
    return tmp_path


def _migrated(examples, name: str, plan) -> str:
    path = examples / name / "run.sh"
    outcome = rewrite_shell(path.read_bytes(), str(path), plan, False)
    assert outcome.status == CHANGED, outcome.error
    text = outcome.output.decode()
    assert parses(text)
    assert rewrite_shell(outcome.output, str(path), plan, False).status == UNCHANGED
    return text


def test_xla_training_launch_script(examples, plan):
    text = _migrated(examples, "xla-training", plan)
    assert "PJRT_DEVICE" not in text
    assert "# TODO(neuron-migrate NM502): deleted XLA_USE_BF16" in text
    assert "export XLA_USE_BF16" not in text
    assert 'export NEURON_CC_FLAGS="--model-type=generic"\n' in text
    assert not [line for line in text.splitlines() if "neuron_parallel_compile" in line.split("#")[0]]
    assert '    torchrun --nproc_per_node="${NPROC}" train.py --epochs 1 "$@"\n' in text
    assert ASYNC_LOAD not in text  # a plain PyTorch script: no Hugging Face loading
    assert "export NEURON_RT_STOCHASTIC_ROUNDING_EN=1\nexport MALLOC_ARENA_MAX=64\n" in text


def _launched_args(text: str) -> list[str]:
    script = ShellScript(text, "run.sh")
    launches = [launch_of(script, c) for c in script.commands]
    return [a.value for a in next(launch for launch in launches if launch is not None).args]


def test_a_migrated_trainer_command_line_parses_with_hf_argument_parser(plan):
    transformers = pytest.importorskip("transformers")
    parser = transformers.HfArgumentParser(transformers.TrainingArguments)
    script = (
        "TP=8\n"
        "torchrun --nproc_per_node 32 train.py --output_dir out --per_device_train_batch_size 1 \\\n"
        "    --overwrite_output_dir --tensor_parallel_size $TP --zero_1 true --use_autocast \\\n"
        "    --warmup_ratio 0.1 --logging_dir logs --gradient_checkpointing true --logging_steps 10\n"
    )
    with pytest.raises(SystemExit):
        parser.parse_args(_launched_args(script))
    result = migrate_shell_text(script, "run.sh", plan).text
    parsed = parser.parse_args(_launched_args(result))
    assert (parsed.output_dir, parsed.per_device_train_batch_size, parsed.logging_steps) == ("out", 1, 10)
    assert (parsed.torch_compile, parsed.torch_compile_backend) == (True, "neuron")
    assert parsed.warmup_steps == 0.1 and parsed.activation_checkpointing is True
    assert "TENSORBOARD_LOGGING_DIR=logs torchrun " in result
    assert migrate_shell_text(result, "run.sh", plan).text == result


def test_a_changed_trainer_flag_held_in_a_variable_gets_a_todo(plan):
    script = "GC=--gradient_checkpointing\ntorchrun train.py --output_dir o --per_device_train_batch_size 1 $GC\n"
    result = migrate_shell_text(script, "run.sh", plan)
    assert "# TODO(neuron-migrate NM517): rename `--gradient_checkpointing` to --activation_checkpointing in the " in (
        result.text
    )
    assert result.text.endswith(script.splitlines(keepends=True)[1])
    assert [f.applied for f in result.findings if f.rule == "NM517"] == [False]


def test_optimum_sft_launch_script(examples, plan):
    text = _migrated(examples, "optimum-sft", plan)
    assert f"# TODO(neuron-migrate NM502): deleted XLA_USE_BF16: {ENV_VARS['XLA_USE_BF16'].message}\n" in text
    assert f"export {ASYNC_LOAD}=1\n" in text and "export XLA_USE_BF16" not in text
    # train.py reads the tensor-parallel size, which its own ScriptArguments takes over: the flag stays
    assert "    --tensor_parallel_size 2\n" in text and "--zero_1" not in text.split("ARGS=(")[1]
    assert f"    --tensor_parallel_size 2\n    {COMPILE_FLAGS}\n    --per_device_train_batch_size 1\n" in text
    assert "zero_1 dropped" in text
    assert '    "${LAUNCH[@]}" train.py "${ARGS[@]}" --max_steps "${MAX_STEPS}" "$@"\n' in text
    assert 'export NEURON_CC_FLAGS="--model-type transformer"\n' in text
    assert "# TODO(neuron-migrate NM504): NEURON_FUSE_SOFTMAX" in text


def test_optimum_inference_launch_script(examples, plan):
    text = _migrated(examples, "optimum-inference", plan)
    todo = re.search(r"# TODO\(neuron-migrate NM514\): (.*)\noptimum-cli export neuron", text).group(1)
    assert 'AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.2-1B-Instruct"' in todo
    assert "dtype=torch.bfloat16" in todo and "llama-neuron/" in todo and "vLLM" in todo
    # generate.py loads a model with transformers: the variable is set before it runs.
    assert f"export {ASYNC_LOAD}=1\npython generate.py" in text


def _export_todo(text: str) -> str:
    return re.search(r"# TODO\(neuron-migrate NM514\): (.*)\n", text).group(1)


def test_the_export_class_comes_from_the_project_code_that_loads_the_exported_folder(tmp_path, plan):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "images.py").write_text(
        "import optimum.neuron as on\n\nFOLDER = 'exported/sdxl'\npath = FOLDER\n"
        "pipe = on.NeuronStableDiffusionXLPipeline.from_pretrained(path)\n"
    )
    script = tmp_path / "compile.sh"
    script.write_text("optimum-cli export neuron --model acme/house-style --batch_size 1 ./exported/sdxl/\n")
    todo = _export_todo(shell(script.read_text(), plan, path=str(script)))
    assert todo.split("; ")[0].endswith(
        'StableDiffusionXLPipeline.from_pretrained("acme/house-style").to("neuron") '
        "(app/images.py loads ./exported/sdxl/ with NeuronStableDiffusionXLPipeline)"
    )
    assert "vLLM" not in todo
    # Read from stdin there is no project to read: nothing says which class it is.
    assert "with the class of its task" in _export_todo(shell(script.read_text(), plan, path="-"))


def test_the_export_class_comes_from_a_local_model_s_own_files(tmp_path, plan):
    (tmp_path / "pipe").mkdir()
    (tmp_path / "pipe" / "model_index.json").write_text('{"_class_name": "FluxPipeline"}')
    (tmp_path / "encoder").mkdir()
    (tmp_path / "encoder" / "modules.json").write_text("[]")
    script = tmp_path / "compile.sh"
    script.write_text(
        "optimum-cli export neuron --model pipe --tensor_parallel_size 4 pipe_neuron/\n"
        "optimum-cli export neuron --model encoder --sequence_length 64 encoder_neuron/\n"
    )
    text = shell(script.read_text(), plan, path=str(script))
    flux, encoder = re.findall(r"# TODO\(neuron-migrate NM514\): (.*)\n", text)
    assert 'FluxPipeline.from_pretrained("pipe").to("neuron") with transformer=FluxTransformer2DModel' in flux
    assert "tp_degree=4" in flux and "its model_index.json names FluxPipeline" in flux
    assert 'SentenceTransformer("encoder", device="neuron") (it is a sentence-transformers model)' in encoder


def test_every_class_an_export_can_become_is_in_the_installed_libraries():
    diffusers = pytest.importorskip("diffusers")
    transformers = pytest.importorskip("transformers")
    from neuron_migrate.rules.launch_scripts import export_class as ec

    loaders = [*ec.TASK_LOADERS.values(), *ec.OPTIMUM_CLASSES.values(), *(found for _, found in ec.NAMED_FAMILIES)]
    libraries = {ec.TRANSFORMERS: transformers, ec.DIFFUSERS: diffusers}
    for loader in loaders:
        library = libraries.get(loader.library)
        names = [loader.name, loader.alternative.split(" ")[0]] if loader.alternative else [loader.name]
        for name in names:
            assert name == "SentenceTransformer" or hasattr(library, name), (loader.library, name)
    assert all(target in ec.TASK_LOADERS for target in ec.TASK_SYNONYMS.values())
    for _, auto in ec.ARCHITECTURE_ENDINGS:
        assert hasattr(transformers, auto), auto


def test_the_pipeline_rewrites_shell_scripts(examples):
    report = run([examples / "xla-training"], load_config([examples]), mode="write")
    status = {f.path.rsplit("/", 1)[-1]: f.status for f in report.files}
    assert status["run.sh"] == "changed"
    assert "neuron_parallel_compile torchrun" not in (examples / "xla-training" / "run.sh").read_text()
    again = run([examples / "xla-training" / "run.sh"], load_config([examples]), mode="check")
    assert [f.status for f in again.files] == ["unchanged"]


# ----- pip install: the requirement rules on a command line ------------------------------------------------


@pytest.mark.parametrize("package", sorted(PACKAGES), ids=str)
def test_pip_install_and_requirements_files_decide_every_package_alike(package, plan):
    spec = f"{package}==2.1.0"
    requirements = rewrite_requirements(f"torch-neuronx\n{spec}\n".encode(), "requirements.txt", plan, False)
    script = migrate_shell_text(f"pip install torch-neuronx {spec}\n", "setup.sh", plan)
    from_file = [ln for ln in (requirements.output or b"").decode().splitlines() if not ln.startswith("#")]
    from_file = from_file or f"torch-neuronx\n{spec}".splitlines()
    installed = script.text.splitlines()[-1].split()[2:] if "pip install" in script.text else []
    assert [w.strip("'\"") for w in installed] == from_file
    assert sorted(f.rule for f in script.findings) == sorted(f.rule for f in requirements.findings)


def test_a_pip_install_left_with_nothing_to_install_goes(plan):
    text = migrate_shell_text("pip install -U libneuronxla torch-xla\npython train.py\n", "setup.sh", plan).text
    assert text == "pip install -U 'torch>=2.13'\npython train.py\n"
    text = migrate_shell_text("pip install --no-deps libneuronxla\npython train.py\n", "setup.sh", plan).text
    assert text == "python train.py\n"
    chained = migrate_shell_text("pip install neuronx-distributed && python train.py\n", "setup.sh", plan).text
    assert chained.splitlines()[1:] == [": && python train.py"]
    assert parses(chained)


def test_pip_install_keeps_options_files_and_expansions(plan):
    line = "pip install -r requirements.txt -c constraints.txt --target torch-xla $EXTRA neuronx-distributed\n"
    text = migrate_shell_text(line, "setup.sh", plan).text
    # "--target torch-xla" is an option value, "-r" still installs something: only the package goes.
    assert text.splitlines()[-1] == "pip install -r requirements.txt -c constraints.txt --target torch-xla $EXTRA"


def test_pip_install_leaves_projects_without_neuron_alone(plan):
    script = "pip install torch==2.1.2 transformers==4.40.0\necho pip install torch-xla\n"
    result = migrate_shell_text(script, "setup.sh", plan)
    assert result.text == script and result.findings == []
