"""Launcher lines: which command of a script starts a Python program (python, torchrun, accelerate launch,
the wrappers around them), its arguments with variables and arrays expanded, the program's source, and
whether it is a Hugging Face training job.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from neuron_migrate.migrate.shell import WORD, Array, Command, ShellScript
from neuron_migrate.rules.hf_fields import (
    NEURON_ONLY_FIELDS,
    RENAMED_FIELDS,
    SHARED_FIELDS,
    VERSIONED_FIELDS,
    fields_taken_over,
)
from neuron_migrate.rules.pip_commands import PYTHON

if TYPE_CHECKING:
    from neuron_migrate.migrate.shell import ListKey, Word


# Commands that run the rest of their line: skipped to find what is launched.
WRAPPERS = frozenset({"exec", "nohup", "time", "neuron_parallel_compile"})
# Launcher options that take no value (every other one takes the next word unless written --opt=value).
TORCHRUN_SWITCHES = frozenset({"--standalone", "--run-path", "--run_path", "-m", "--module"})
ACCELERATE_SWITCHES = frozenset(
    {
        "--cpu", "--multi_gpu", "--multi-gpu", "--tpu", "--use_deepspeed", "--use_fsdp", "--use_megatron_lm",
        "--use_xpu", "-m", "--module", "--debug", "-q", "--quiet", "--downcast_bf16", "--same_network",
        "--dynamo_use_fullgraph", "--dynamo_use_dynamic", "--tpu_use_cluster", "--tpu_use_sudo",
    }
)  # fmt: skip
# Options that make the launched program something other than a Python script.
NOT_PYTHON = frozenset({"--no-python", "--no_python"})
PYTHON_VALUE_OPTIONS = frozenset({"-W", "-X"})
# `python -m MODULE` that is itself a launcher.
MODULE_LAUNCHERS = {
    "torch.distributed.run": "torchrun",
    "torch.distributed.launch": "torchrun",
    "accelerate.commands.launch": "accelerate",
}
XLA_DIST = "torch_xla.distributed.xla_dist"
# A launched script is a Hugging Face job when it imports one of these...
HF_IMPORT = re.compile(r"^[ \t]*(?:from|import)[ \t]+(?:transformers|trl|optimum|peft)\b", re.MULTILINE)
# ...or when its command line carries TrainingArguments flags. Neuron-only flags and names any training
# script may use (--learning_rate, --max_steps, --seed...) are no evidence: a neuronx_distributed
# script takes --tensor_parallel_size and --max_steps too.
GENERIC_FLAGS = frozenset(
    {
        "learning_rate", "max_steps", "seed", "weight_decay", "optim", "optim_args", "max_grad_norm", "adam_beta1",
        "adam_beta2", "adam_epsilon", "do_train", "do_eval", "log_level", "gradient_checkpointing", "run_name",
    }
)  # fmt: skip
TRAINER_FLAGS = frozenset(
    name
    for name in {*SHARED_FIELDS, *VERSIONED_FIELDS, *RENAMED_FIELDS.values()} - GENERIC_FLAGS - NEURON_ONLY_FIELDS
    if "_" in name
)
# Arguments passed through from the script's own command line.
PASS_THROUGH = re.compile(r'"?\$(?:[@*]|\{[@*]\})"?')


@dataclass(frozen=True)
class Arg:
    """One argument of a launch as the shell will pass it. ``word`` is where it is written; None
    when it comes from a variable's value (then it cannot be edited where the launch is)."""

    value: str
    word: Word | None = None
    key: ListKey | None = None
    index: int = -1


@dataclass(frozen=True)
class Launch:
    command: Command
    launcher: str  # "torchrun", "accelerate", "python" or "xla_dist"
    script: Arg | None
    module: bool
    args: tuple[Arg, ...]


_ARRAY_USE = re.compile(r'"?\$\{([A-Za-z_]\w*)\[[@*]\]\}"?')
_SCALAR_USE = re.compile(r'\$\{?([A-Za-z_]\w*)\}?|"\$\{?([A-Za-z_]\w*)\}?"')
_FLAG = re.compile(r"--([A-Za-z][\w-]*)(=.*)?", re.DOTALL)


def expand(script: ShellScript, command: Command) -> list[Arg]:
    """The command's words with ``"${ARRAY[@]}"`` and ``$VAR`` replaced by what the script put in
    them (when it did so literally, earlier in the file)."""
    out = []
    key = ("command", command.index)
    for index, item in enumerate(command.items):
        if item.kind != WORD:
            continue
        array_use = _ARRAY_USE.fullmatch(item.raw)
        scalar_use = _SCALAR_USE.fullmatch(item.raw)
        found = None
        if array_use:
            found = script.variable_before(array_use.group(1), command.start)
        elif scalar_use:
            found = script.variable_before(scalar_use.group(1) or scalar_use.group(2), command.start)
            quoted = scalar_use.group(2) is not None
            if isinstance(found, str) and (quoted and len(found.split()) != 1 or "$" in found):
                found = None
        if isinstance(found, Array) and array_use:
            out += [Arg(w.value, w, ("array", found.index), k) for k, w in enumerate(found.elements)]
        elif isinstance(found, str) and len(found.split()) == 1:
            # `--tensor_parallel_size $TP`: the value comes from a variable, but the word that
            # passes it is here, and goes with its flag.
            out.append(Arg(found.split()[0], item, key, index))
        elif isinstance(found, str) and found.split():
            out += [Arg(value) for value in found.split()]
        else:
            out.append(Arg(item.value, item, key, index))
    return out


def strip_wrappers(args: list[Arg]) -> list[Arg]:
    """``env A=1 nohup exec CMD ...`` -> ``CMD ...``; ``neuron_parallel_compile A=1 CMD`` -> ``CMD`` too (the
    variables it set for the command are settings, see apply_env_table)."""
    i = 0
    while i < len(args):
        name = os.path.basename(args[i].value)
        if name == "env":
            i += 1
            while i < len(args) and (args[i].value.startswith("-") or re.match(r"[A-Za-z_]\w*=", args[i].value)):
                i += 1
        elif name in WRAPPERS:
            i += 1
            while i < len(args) and re.match(r"[A-Za-z_]\w*=", args[i].value):
                i += 1
        else:
            break
    return args[i:]


def launch_of(script: ShellScript, command: Command) -> Launch | None:
    """What ``command`` launches, when it is torchrun, accelerate launch or python with a script."""
    launches = script.shared.setdefault("launches", {})
    if command.index not in launches:
        launches[command.index] = _launch_of(script, command)
    return launches[command.index]


def _launch_of(script: ShellScript, command: Command) -> Launch | None:
    args = strip_wrappers(expand(script, command))
    if not args:
        return None
    head = os.path.basename(args[0].value)
    if head == "torchrun":
        return _after_options(command, args, 1, TORCHRUN_SWITCHES, "torchrun")
    if head == "accelerate" and len(args) > 1 and args[1].value == "launch":
        return _after_options(command, args, 2, ACCELERATE_SWITCHES, "accelerate")
    if not PYTHON.fullmatch(head):
        return None
    i = 1
    while i < len(args) and args[i].value.startswith("-"):
        option = args[i].value
        if option == "-c":
            return None
        if option == "-m" and i + 1 < len(args):
            module = args[i + 1].value
            if module in MODULE_LAUNCHERS:
                launcher = MODULE_LAUNCHERS[module]
                switches = TORCHRUN_SWITCHES if launcher == "torchrun" else ACCELERATE_SWITCHES
                return _after_options(command, args, i + 2, switches, launcher)
            if module == XLA_DIST:
                return Launch(command, "xla_dist", args[i + 1], True, tuple(args[i + 2 :]))
            return Launch(command, "python", args[i + 1], True, tuple(args[i + 2 :]))
        i += 2 if option in PYTHON_VALUE_OPTIONS else 1
    if i >= len(args):
        return None
    return Launch(command, "python", args[i], False, tuple(args[i + 1 :]))


def _after_options(command: Command, args: list[Arg], i: int, switches: frozenset[str], launcher: str):
    module = False
    while i < len(args):
        option = args[i].value
        if option == "--":
            i += 1
            break
        if _unresolved(args[i]) and any(a.value.endswith(".py") for a in args[i + 1 :]):
            # `torchrun $DISTRIBUTED_ARGS train.py`: a variable the script did not set literally
            # holds launcher options; the script comes after it.
            i += 1
            continue
        if not option.startswith("-"):
            break
        if option in NOT_PYTHON:
            return None
        module = module or option in ("-m", "--module")
        i += 1 if "=" in option or option in switches else 2
    if i >= len(args):
        return None
    return Launch(command, launcher, args[i], module, tuple(args[i + 1 :]))


def _unresolved(arg: Arg) -> bool:
    """An expansion (``$ARGS``, ``"${ARGS[@]}"``) whose value the script does not show."""
    return arg.word is not None and arg.value == arg.word.value and bool(
        _ARRAY_USE.fullmatch(arg.word.raw) or _SCALAR_USE.fullmatch(arg.word.raw)
    )


def flag_name(value: str) -> str | None:
    """``--tensor-parallel-size=2`` -> ``tensor_parallel_size``."""
    match = _FLAG.fullmatch(value)
    return match.group(1).replace("-", "_") if match else None


def script_source(script: ShellScript, launch: Launch) -> str | None:
    """The launched Python file's text, found next to the shell script; None when it is not there."""
    if launch.script is None:
        return None
    name = launch.script.value
    if not name or "$" in name or "`" in name:
        return None
    if launch.module:
        name = name.replace(".", "/") + ".py"
    path = os.path.normpath(os.path.join(os.path.dirname(script.path), name))
    written = script.files.get(path)  # a notebook's %%writefile cell
    return written if written is not None else read_source(path)


def read_source(path: str) -> str | None:
    """A file's text (its first 2 MB), None when it cannot be read; read once per version of the file."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    # Keyed by the file's stat too: a long-lived process (an editor integration, the tests) must see edits.
    return _read_version(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=64)
def _read_version(path: str, _mtime_ns: int, _size: int) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(2_000_000)
    except OSError:
        return None


def is_hf_job(script: ShellScript, launch: Launch) -> bool:
    if launch.launcher == "xla_dist":
        return False
    source = script_source(script, launch)
    if source is not None and HF_IMPORT.search(source):
        return True
    return any(flag_name(arg.value) in TRAINER_FLAGS for arg in launch.args)


def own_flags(script: ShellScript, launch: Launch) -> set[str]:
    """Flags the launched script defines itself (argparse or dataclass fields): never Neuron's. Those of
    the Neuron-only fields its own dataclass takes over in the migration count too, whether the script
    is seen before or after its own migration."""
    source = script_source(script, launch) or ""
    names = set(re.findall(r"[\"']--([A-Za-z][\w-]*)", source)) | set(
        re.findall(r"^[ \t]+([A-Za-z_]\w*)[ \t]*:", source, re.MULTILINE)
    )
    taken = fields_taken_over(source) if "optimum" in source else None
    return {name.replace("-", "_") for name in names} | set(taken.fields if taken else ())
