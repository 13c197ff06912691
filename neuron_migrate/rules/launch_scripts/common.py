"""What the launch_scripts rules share: helpers, constants and base classes."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from neuron_migrate.migrate.shell import WORD, Array, Command, ShellEdits, ShellScript
from neuron_migrate.rules.base import MANUAL, Rule, RuleMeta, all_rules, marker_comment
from neuron_migrate.rules.env_vars.common import (
    BY_HAND,
    DELETE,
    DELETE_BY_HAND,
    ENV_VARS,
    FLAG_VARIABLES,
    KEEP,
    RENAME,
    classify_env_var,
    drop_flags,
    flags_in,
)
from neuron_migrate.rules.hf_fields import (
    DROPPED_FIELDS,
    NEURON_ONLY_FIELDS,
    PARALLEL_FIELDS,
    RENAMED_FIELDS,
    REVIEWED_FIELDS,
    REVIEWED_HARMLESS,
    SFT_RENAMED,
    SHARED_FIELDS,
    VERSIONED_FIELDS,
    fields_taken_over,
    installed_fields,
    parses_sft_config,
    table_says,
)
from neuron_migrate.rules.pip_commands import PYTHON
from neuron_migrate.rules.requirements.common import NEURON_INDEX
from neuron_migrate.rules.requirements.common import TRIGGERS as REQUIREMENT_TRIGGERS

if TYPE_CHECKING:
    from neuron_migrate.migrate.shell import ListKey, Setting, Word

NEURON_DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest"
DOCS_PARALLEL_COMPILE = (
    f"{NEURON_DOCS}/frameworks/torch/torch-neuronx/api-reference-guide/training/pytorch-neuron-parallel-compile.html"
)
DOCS_ENV = f"{NEURON_DOCS}/torch/reference/env-vars.html"
DOCS_COMPILE = f"{NEURON_DOCS}/torch/compile/reference-torch-compile.html"
DOCS_DISTRIBUTED = f"{NEURON_DOCS}/torch/guides/torch-distributed.html"
DOCS_HF = f"{NEURON_DOCS}/torch/reference/torchneuron-resources.html"
DOCS_NO_XLA_INFERENCE = (
    f"{NEURON_DOCS}/about-neuron/announcements/neuron2.x/announce-no-support-torch-xla-inference-trn.html"
)
DOCS_TRAINING_ARGS = "https://huggingface.co/docs/transformers/main_classes/trainer#transformers.TrainingArguments"
DOCS_DISTRIBUTED_CONFIG = "https://huggingface.co/docs/transformers/main/en/perf_infer_gpu_multi"
DOCS_TORCHRUN = "https://pytorch.org/docs/stable/elastic/run.html"
DOCS_DCP = "https://pytorch.org/docs/stable/distributed.checkpoint.html"
DOCS_TRN2_LAYOUT = f"{NEURON_DOCS}/training/best-practices.html"
# The optimum-cli commands: what each did is in optimum-neuron's own command modules.
DOCS_CLI = "https://huggingface.co/docs/optimum-neuron/guides/export_model"
ASYNC_LOAD = "HF_DEACTIVATE_ASYNC_LOAD"
COMPILE_FLAGS = "--torch_compile true --torch_compile_backend neuron"
# ----- launchers --------------------------------------------------------------------------------------------

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


@dataclass(frozen=True)
class NeuronFlag:
    """A NeuronTrainingArguments-only flag on a launch, with its value when it has one."""

    name: str
    flag: Arg
    value: Arg | None

    @property
    def written(self) -> str:
        return self.flag.value if self.value is None else f"{self.flag.value} {self.value.value}"

    @property
    def editable(self) -> bool:
        parts = [self.flag] if self.value is None else [self.flag, self.value]
        return all(p.word is not None and p.key == self.flag.key for p in parts)


def neuron_flags(script: ShellScript, launch: Launch) -> list[NeuronFlag]:
    if not is_hf_job(script, launch):
        return []
    own = own_flags(script, launch)
    out = []
    args = launch.args
    for k, arg in enumerate(args):
        name = flag_name(arg.value)
        if name not in NEURON_ONLY_FIELDS or name in own:
            continue
        out.append(NeuronFlag(name, arg, flag_value(args, k)))
    return out


def flag_value(args: tuple[Arg, ...], k: int, bool_only: bool = False) -> Arg | None:
    """The value given to the flag ``args[k]`` as the next word (None for ``--flag=value`` and a bare
    switch). ``bool_only``: a bool field, whose value may be left out, takes only a bool word."""
    if "=" in args[k].value or k + 1 >= len(args):
        return None
    following = args[k + 1]
    if following.value.startswith("-") or PASS_THROUGH.fullmatch(following.word.raw if following.word else ""):
        return None
    if bool_only and following.value.lower() not in BOOL_WORDS:
        return None
    return following


# What HfArgumentParser reads as the value of a bool field (transformers' string_to_bool).
BOOL_WORDS = frozenset({"true", "false", "yes", "no", "t", "f", "y", "n", "1", "0"})


def flag_reason(name: str, value: str | None) -> tuple[str, bool]:
    """Why a Neuron-only flag goes and what replaces it; True when a human should check."""
    if name in PARALLEL_FIELDS:
        if value == "1":
            return "TrainingArguments has no such field, and a size of 1 asked for no parallelism", False
        kind = name.split("_parallel")[0]
        config = f"DistributedConfig({PARALLEL_FIELDS[name]}={value or 'N'})"
        return f"{kind} parallelism moves into the script: build the model with distributed_config={config}", True
    if name in REVIEWED_FIELDS:
        if REVIEWED_HARMLESS.get(name) is False and (value or "").lower() in ("false", "0", "no"):
            return "TrainingArguments has no such field, and Trainer behaves as this value asked", False
        return REVIEWED_FIELDS[name], True
    return (
        f"TrainingArguments has no such field: {DROPPED_FIELDS.get(name, 'it only configured optimum-neuron')}",
        False,
    )


ONE_REPLICA = "TrainingArguments has no such field, and this launch has one data-parallel rank: nothing to shard"


def zero_1_reason(script: ShellScript, command: Command, launch: Launch) -> tuple[str, bool]:
    """Why ``--zero_1`` goes, with the DistributedConfig that shards like it when the launch says how
    many processes it starts and the tensor-parallel size."""
    words = _cli_words(script, command)
    processes = _option(words, "--nproc_per_node", "--nproc-per-node")
    nodes = _option(words, "--nnodes") or "1"
    # the size may stay on the launch line (the script's own dataclass takes it over), so it is read there
    tp = _option([a.value for a in launch.args], "--tensor_parallel_size", "--tensor-parallel-size") or "1"
    if not (processes or "").isdigit() or not nodes.isdigit() or not tp.isdigit() or int(tp) < 1:
        return REVIEWED_FIELDS["zero_1"], True
    world = int(processes) * int(nodes)
    if world % int(tp):
        return REVIEWED_FIELDS["zero_1"], True
    if world == int(tp):
        return ONE_REPLICA, False
    return zero_1_text(world, int(tp)), True


def zero_1_text(world: int, tp: int) -> str:
    config = f"tp_size={tp}, fsdp_size={world // tp}" if tp != 1 else f"fsdp_size={world}"
    return (
        f"zero_1 dropped: it sharded the optimizer state over the {world // tp} data-parallel ranks of these "
        f"{world} processes; FSDP shards it (with the parameters and gradients) when the script builds the model "
        f"with distributed_config=DistributedConfig({config})"
    )


def _indexed_array(script: ShellScript, key: ListKey | None) -> bool:
    return key is not None and key[0] == "array" and script.array_is_indexed(script.arrays[key[1]].name)


def _anchor(script: ShellScript, key: ListKey | None, command: Command) -> int:
    """Where the marker about an item goes: above its array, else above its command."""
    if key is not None and key[0] == "array":
        return script.arrays[key[1]].start
    return command.start


def _command_span(command: Command) -> tuple[int, int]:
    return command.start, command.end


# ----- the rules ----------------------------------------------------------------------------------------------


class ShellRule(Rule):
    """A rule of launch scripts: the shell adapter calls :meth:`check` once per script."""

    def __init__(self, ctx: ShellEdits) -> None:
        super().__init__(ctx)  # type: ignore[arg-type]

    def check(self, script: ShellScript) -> None:
        raise NotImplementedError


_PARALLEL_COMPILE_REVIEW = (
    "neuron_parallel_compile removed: TorchNeuron compiles on first call and keeps the result in its NEFF cache "
    "(TORCH_NEURONX_NEFF_CACHE_DIR); a step that only extracted graphs now really runs: shorten it or drop it"
)
_ASYNC_LOAD_WHY = "transformers' threaded weight loading can hang on the neuron device"
_COMPILE_REVIEW = (
    f"{COMPILE_FLAGS} added: Trainer compiles the model with the neuron backend; check that the script passes "
    "these flags on to its TrainingArguments"
)
# A whole trn1.32xlarge: 16 Trainium chips of 2 NeuronCores. TorchNeuron runs on Trn2/Trn3 only, where
# a trn2.48xlarge shows 64 logical NeuronCores (16 Trainium2 chips, 8 physical cores each, paired by the
# default LNC=2), one process each (DOCS_TRN2_LAYOUT).
TRN1_NODE_CORES = "32"
_TRN2_CORES = (
    "--nproc_per_node {count} was one process per NeuronCore of a trn1.32xlarge; TorchNeuron runs on Trn2/Trn3, "
    "where a trn2.48xlarge has 64 logical NeuronCores (4 per Trainium2 chip with the default LNC=2): launch 64 "
    "processes there and choose the parallel sizes for 64 ranks"
)


def _trn1_node_count(script: ShellScript, command: Command) -> str | None:
    """The launch's ``--nproc_per_node`` when it is a whole trn1.32xlarge's NeuronCore count."""
    count = _option(_cli_words(script, command), "--nproc_per_node", "--nproc-per-node")
    return count if count == TRN1_NODE_CORES else None


# ----- TrainingArguments flags the target transformers release changed -------------------------------------


def trainer_takes(name: str) -> bool:
    """Whether the target release's TrainingArguments has the field ``name``: the installed source when
    there is one, else the version table (as the Python rules decide)."""
    real = installed_fields("TrainingArguments")
    if real is not None:
        return name in real
    table = table_says("TrainingArguments", name)
    return True if table is None else table


# Removed or renamed fields that are bool switches (their value may be left out).
SWITCH_FIELDS = frozenset({"overwrite_output_dir", *RENAMED_FIELDS})


def changed_trainer_flags(script: ShellScript, launch: Launch) -> list[NeuronFlag]:
    """TrainingArguments flags of a Hugging Face launch that the target release removed or renamed."""
    if not is_hf_job(script, launch):
        return []
    own = own_flags(script, launch)
    out = []
    for k, arg in enumerate(launch.args):
        name = flag_name(arg.value)
        if name is None or name in own:
            continue
        removed = name in VERSIONED_FIELDS and not trainer_takes(name)
        renamed = name in RENAMED_FIELDS and trainer_takes(RENAMED_FIELDS[name])
        renamed = renamed or (name in SFT_RENAMED and parses_sft_config(script_source(script, launch) or ""))
        if removed or renamed:
            out.append(NeuronFlag(name, arg, flag_value(launch.args, k, bool_only=name in SWITCH_FIELDS)))
    return out


@dataclass(frozen=True)
class FlagEdit:
    """What becomes of one flag: ``rename`` to another field (value kept), else it goes; ``prefix`` is
    an assignment put in front of the launch."""

    message: str
    review: bool = False
    rename: str = ""
    prefix: str = ""


TENSORBOARD_DIR = "TENSORBOARD_LOGGING_DIR"
_LOGGING_DIR_GONE = "TrainingArguments has no logging_dir since transformers 5.2"
_OVERWRITE_GONE = (
    "transformers 5 has no overwrite_output_dir and always writes into output_dir; a script that still reads "
    "training_args.overwrite_output_dir must drop that check"
)


def _overwrite_output_dir(flag: NeuronFlag, launch: Launch) -> FlagEdit:
    return FlagEdit(_OVERWRITE_GONE, review=True)


def _warmup_ratio(flag: NeuronFlag, launch: Launch) -> FlagEdit:
    ratio = _number(flag)
    if any(flag_name(a.value) == "warmup_steps" for a in launch.args):
        return FlagEdit(
            "warmup_steps wins, as it did over warmup_ratio; when warmup_steps is 0, pass the ratio as "
            "--warmup_steps (a value below 1 is a ratio)",
            review=True,
        )
    if ratio is not None and ratio < 1:
        return FlagEdit("warmup_steps takes the ratio: a value below 1 is a share of the steps", rename="warmup_steps")
    return FlagEdit(
        "passed as --warmup_steps, which reads a value below 1 as a ratio and 1 or more as a step count: "
        "check the value",
        review=True,
        rename="warmup_steps",
    )


def _logging_dir(flag: NeuronFlag, launch: Launch) -> FlagEdit:
    value = flag.value
    written = value.word.raw if value is not None and value.word is not None else None
    if written is None and flag.flag.word is not None:
        written = flag.flag.word.raw.partition("=")[2]
    if not written:
        return FlagEdit(f"{_LOGGING_DIR_GONE}: set {TENSORBOARD_DIR} for the launch instead", review=True)
    return FlagEdit(f"{_LOGGING_DIR_GONE}: TensorBoard reads {TENSORBOARD_DIR}, now set for the launch",
                    prefix=f"{TENSORBOARD_DIR}={written}")  # fmt: skip


def _renamed(flag: NeuronFlag, launch: Launch) -> FlagEdit:
    new = RENAMED_FIELDS[flag.name]
    return FlagEdit(f"transformers 5 calls it {new} (the old name is an alias until v6)", rename=new)


def _sft_renamed(flag: NeuronFlag, launch: Launch) -> FlagEdit:
    new = SFT_RENAMED[flag.name]
    return FlagEdit(f"TRL's SFTConfig calls it {new}; HfArgumentParser refuses --{flag.name}", rename=new)


# Field -> what becomes of its flag, as the Python rules do with the keyword (optimum_training).
FLAG_EDITS = {
    "overwrite_output_dir": _overwrite_output_dir,
    "warmup_ratio": _warmup_ratio,
    "logging_dir": _logging_dir,
    **{name: _renamed for name in RENAMED_FIELDS},
    **{name: _sft_renamed for name in SFT_RENAMED},
}


def _number(flag: NeuronFlag) -> float | None:
    text = flag.value.value if flag.value is not None else flag.flag.value.partition("=")[2]
    try:
        return float(text)
    except ValueError:
        return None


# ----- optimum-cli and xla_dist -----------------------------------------------------------------------------

# `optimum-cli neuron SUBCOMMAND` -> the TorchNeuron counterpart.
NEURON_SUBCOMMANDS = {
    "cache": (
        "the Hugging Face Hub compile cache has no TorchNeuron counterpart: point TORCH_NEURONX_NEFF_CACHE_DIR at a "
        "local or NFS folder the machines share, then delete this step"
    ),
    "consolidate": (
        "checkpoints written with save_pretrained need no consolidation: delete this step; torch.distributed."
        "checkpoint shards convert with torch.distributed.checkpoint.format_utils.dcp_to_torch_save"
    ),
    "serve": "serve with vLLM Neuron instead: vllm serve {model} (the Neuron plugin of vLLM), then delete this step",
}


def _cli_words(script: ShellScript, command: Command) -> list[str]:
    return [a.value for a in strip_wrappers(expand(script, command))]


def _option(words: list[str], *names: str) -> str | None:
    for i, word in enumerate(words):
        for name in names:
            if word == name and i + 1 < len(words):
                return words[i + 1]
            if word.startswith(name + "="):
                return word[len(name) + 1 :]
    return None


_XLA_DIST_STEP = (
    "xla_dist is gone: launch the script with torchrun --nnodes N --nproc_per_node P (one process per NeuronCore) "
    "on every node; xla_dist's own options have no counterpart"
)
_UNPARSED_STEP = (
    "the shell parser could not read this line, so it was not migrated: it names {names}; "
    "migrate it by hand (or write it as plain commands) and run again"
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def legacy_names(text: str) -> list[str]:
    """The legacy variables, commands and packages ``text`` mentions, in order of appearance."""
    found: list[str] = []
    for match in _NAME.finditer(text):
        name = match.group(0)
        if name not in found and (classify_env_var(name, text) is not None or name in LEGACY_WORDS):
            found.append(name)
    return found


# Legacy commands, and the package names the requirement rules look for (not the Neuron pip
# repository: naming it is not legacy).
LEGACY_WORDS = frozenset(
    {"neuron_parallel_compile", "optimum-cli", "xla_dist", XLA_DIST}
    | {word.decode() for word in REQUIREMENT_TRIGGERS if word != NEURON_INDEX.encode()}
)


def _manual(rule: ShellRule, command: Command, step: str) -> None:
    _manual_span(rule, _command_span(command), step, command.start)


def _manual_span(rule: ShellRule, span: tuple[int, int], step: str, anchor: int) -> None:
    ctx, meta = rule.ctx, rule.meta
    if ctx.suppressed(meta.id, span):
        ctx.skip(meta, *span)
    else:
        ctx.manual(meta, *span, step, anchor)


# ----- environment variables: the table of env_vars.py, applied to shell settings ---------------------------


@dataclass(frozen=True)
class EnvDecision:
    setting: Setting
    rule: str
    kind: str  # DELETE, BY_HAND, RENAME or KEEP (as in env_vars)
    message: str
    rename_to: str = ""
    value: str = ""  # KEEP: the value as it will be written
    review: bool = False  # a deletion a reviewer should know about
    todo: bool = False  # a deletion that leaves work in the code (DELETE_BY_HAND)


def decide_env(setting: Setting, flags_of: str = "") -> EnvDecision | None:
    """What the table says about one shell setting (the shell twin of the Python rules' ``_decide``).
    ``flags_of``: the setting is of a shell variable that flags variable (NEURON_CC_FLAGS) is set from."""
    name = setting.name
    action = classify_env_var(flags_of or name, setting.value)
    if action is None:
        return None
    if setting.unset:
        # Unsetting a variable nobody reads is dead code; a renamed variable is unset under its new name.
        if action.kind in (DELETE, DELETE_BY_HAND):
            return EnvDecision(setting, action.rule, DELETE, f"{name}: {action.message}")
        if action.kind == RENAME:
            return EnvDecision(setting, action.rule, RENAME, f"{name}: {action.message}", action.rename_to)
        return None
    if action.kind == DELETE_BY_HAND:
        return EnvDecision(setting, action.rule, DELETE, f"{name}: {action.message}", todo=True)
    if action.kind != KEEP:
        return EnvDecision(setting, action.rule, action.kind, f"{name}: {action.message}", action.rename_to)
    found = flags_in(setting.value or "", action.drop_flags)
    raw = setting.item.raw
    operator = "+=" if raw[len(name) :].startswith("+=") else "="
    edited = _without_flags(raw[len(name) + len(operator) :], action.drop_flags)
    if edited is None:
        return EnvDecision(setting, action.rule, BY_HAND, f"{name}: remove the XLA-era {', '.join(found)} by hand")
    inner = edited.strip("\"'").strip()
    into = f" (set into {flags_of})" if flags_of else ""
    if inner in (f"${name}", f"${{{name}}}") or (operator == "+=" and not inner):
        message = f"a {name} setting that only added XLA-era {', '.join(found)}{into}"
        return EnvDecision(setting, action.rule, DELETE, message, review=True)
    message = action.message.format(flags=", ".join(found))
    return EnvDecision(setting, action.rule, KEEP, f"{name}{into}: {message}" if flags_of else message, value=edited)


def _flag_sources(script: ShellScript) -> dict[str, str]:
    """Shell variables a flags variable is set from (``export NEURON_CC_FLAGS="$FLAGS"``) -> that variable."""
    out = {}
    for setting in script.settings():
        if setting.name not in FLAG_VARIABLES or setting.unset:
            continue
        item = setting.item
        for reference in script.references:
            if item.start <= reference.start < item.end and reference.name != setting.name:
                out.setdefault(reference.name, setting.name)
    return out


def _without_flags(raw: str, flags: tuple[str, ...]) -> str | None:
    """A value as written, minus ``flags``; None when its quoting is too mixed to edit safely."""
    quote = raw[:1] if raw[:1] in ("'", '"') else ""
    inner = raw[1:-1] if quote and raw.endswith(quote) and len(raw) > 1 else raw
    if quote and (not raw.endswith(quote) or len(raw) < 2 or re.search(r"(?<!\\)" + re.escape(quote), inner)):
        return None
    if not quote and re.search(r"['\"\\]", inner):
        return None
    dropped = drop_flags(inner, flags)
    if flags_in(dropped, flags):
        return None
    return f"{quote}{dropped}{quote}"


def _env_metas() -> dict[str, RuleMeta]:
    ids = {action.rule for action in ENV_VARS.values()}
    return {rule.meta.id: rule.meta for rule in all_rules() if rule.meta.id in ids}


def apply_env_table(script: ShellScript, ctx: ShellEdits) -> None:
    metas = {rule_id: meta for rule_id, meta in _env_metas().items() if rule_id in ctx.selected}
    if not metas:
        return
    by_command: dict[int, list[EnvDecision]] = {}
    sources = _flag_sources(script)
    # ``neuron_parallel_compile XLA_DOWNCAST_BF16=1 torchrun ...``: NM510 unwraps the command in the same pass,
    # so the variables it set for the wrapped command are settings too
    for setting in script.settings(wrappers=frozenset({"neuron_parallel_compile"})):
        decision = decide_env(setting)
        if decision is None and setting.name in sources and not setting.unset:
            decision = decide_env(setting, flags_of=sources[setting.name])
        if decision is not None and decision.rule in metas:
            by_command.setdefault(setting.command.index, []).append(decision)
    renamed: dict[str, str] = {}
    kept_names: set[str] = set()
    for index, decisions in by_command.items():
        command = script.commands[index]
        live = []
        for decision in decisions:
            meta = metas[decision.rule]
            item = decision.setting.item
            if ctx.suppressed(meta.id, (item.start, item.end), (command.start, command.start + 1)):
                ctx.skip(meta, item.start, item.end)
                kept_names.add(decision.setting.name)
            else:
                live.append(decision)
        _apply_deletions(script, ctx, command, [d for d in live if d.kind == DELETE], metas, kept_names)
        for decision in live:
            _apply_other(ctx, command, decision, metas[decision.rule], renamed, kept_names)
    for name, new in renamed.items():
        if name in kept_names:
            continue
        for reference in script.references:
            if reference.name == name:
                ctx.rewrite(reference.start, reference.end, new)
    _mark_gone_reads(script, ctx, metas, set(by_command))


_GONE_READ = "reads ${name}, which nothing sets any more ({why}): it is empty here; drop the code that depends on it"


def _mark_gone_reads(script: ShellScript, ctx: ShellEdits, metas: dict[str, RuleMeta], settings: set[int]) -> None:
    """A TODO where the script reads a variable whose settings are deleted (``if [ "$XLA_USE_BF16" = 1 ]``,
    a branch for ``neuron_parallel_compile``'s graph extraction): the test now sees an empty value."""
    for reference in script.references:
        action = classify_env_var(reference.name)
        if action is None or action.kind not in (DELETE, DELETE_BY_HAND) or action.rule not in metas:
            continue
        command = next((c for c in script.commands if c.start <= reference.start < c.end), None)
        if command is None or command.index in settings:
            continue  # `export XLA_FLAGS="$XLA_FLAGS ..."` goes with its setting
        span = (reference.start - 1, reference.end)
        meta = metas[action.rule]
        if ctx.suppressed(meta.id, span, (command.start, command.start + 1)):
            ctx.skip(meta, *span)
        else:
            ctx.manual(meta, *span, _GONE_READ.format(name=reference.name, why=action.message), command.start)


def _apply_deletions(
    script, ctx: ShellEdits, command: Command, deletions: list[EnvDecision], metas, kept_names
) -> None:
    if not deletions:
        return
    indexes = {command.items.index(d.setting.item) for d in deletions}
    whole = ctx.is_emptied(command, indexes)
    if whole and ctx.deletion(command) is None:
        for decision in deletions:
            item = decision.setting.item
            step = f"{decision.message}; delete this setting by hand (it is joined to another command)"
            ctx.manual(metas[decision.rule], item.start, item.end, step, command.start)
            kept_names.add(decision.setting.name)
        return
    if whole:
        ctx.delete(command)
    else:
        for i in sorted(indexes | _bare_env(command, indexes)):
            ctx.remove(("command", command.index), i)
    for decision in deletions:
        item, meta = decision.setting.item, metas[decision.rule]
        message = f"deleted {decision.message}"
        if decision.todo:
            ctx.record(meta, item.start, item.end, message, MANUAL, applied=True, fix=message)
            ctx.mark(command.start, marker_comment(meta.id, MANUAL, message))
        elif decision.review:
            ctx.review(meta, item.start, item.end, message, message, command.start)
        else:
            ctx.safe(meta, item.start, item.end, message)


def _bare_env(command: Command, removing: set[int]) -> set[int]:
    """``env`` itself, when every variable it set is being removed: ``env python x.py`` -> ``python x.py``."""
    items = command.items
    heads = [i for i, item in enumerate(items) if item.kind == WORD]
    if not heads or items[heads[0]].value != "env":
        return set()
    settings = []
    for i in heads[1:]:
        if not re.match(r"[A-Za-z_]\w*=", items[i].value):
            break
        settings.append(i)
    return {heads[0]} if settings and set(settings) <= removing and len(settings) < len(heads) - 1 else set()


def _apply_other(ctx: ShellEdits, command: Command, decision: EnvDecision, meta: RuleMeta, renamed, kept_names) -> None:
    setting, item = decision.setting, decision.setting.item
    if decision.kind == BY_HAND:
        ctx.manual(meta, item.start, item.end, decision.message, command.start)
        kept_names.add(setting.name)
    elif decision.kind == RENAME:
        ctx.rewrite(setting.name_start, setting.name_start + len(setting.name), decision.rename_to)
        renamed[setting.name] = decision.rename_to
        ctx.review(
            meta, item.start, item.end, decision.message, decision.message, command.start, after=decision.rename_to
        )
    elif decision.kind == KEEP:
        raw = item.raw
        operator = "+=" if raw[len(setting.name) :].startswith("+=") else "="
        value_start = item.start + len(setting.name) + len(operator)
        ctx.rewrite(value_start, item.end, decision.value)
        ctx.review(meta, item.start, item.end, decision.message, decision.message, command.start, after=decision.value)


# ----- heredocs: a script written or run from the script ------------------------------------------------------

# Programs that run the shell script they read (a batch job script for sbatch / qsub).
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ssh", "sbatch", "qsub"})
PRINTERS = frozenset({"cat", "echo", "printf"})
SHELL_SHEBANG = re.compile(r"#![ \t]*/\S*(?:/env[ \t]+)?(?:ba|z|da)?sh\b")
PYTHON_SHEBANG = re.compile(r"#![ \t]*/\S*(?:/env[ \t]+)?python")
# Commands that only pass their own arguments on (`sudo tee /opt/run.sh <<EOF`).
PREFIXES = frozenset({"sudo", "env", "exec", "nohup", "time"})
_HEREDOC_STEP = (
    "this heredoc is {kind} that is not migrated in place: it names {names}; migrate it by hand (or move it "
    "to a file of its own, which the migration reads) and run again"
)


def heredoc_kind(script: ShellScript, operator: int, body: str) -> str:
    """What the heredoc whose ``<<`` is at ``operator`` holds: "shell" (a script that is run, or written
    to a ``.sh`` file), "python", "data" (written to a file or read by a program) or "message" (only
    printed)."""
    command = next((c for c in script.commands if any(i.start == operator for i in c.items)), None)
    if command is None:
        return "data"
    first_line = body.lstrip().split("\n", 1)[0]
    head, words = _program(command)
    targets = [w for w in words[1:] if not w.startswith("-")] if head == "tee" else []
    targets += [i.raw.lstrip("0123456789&>| \t") for i in command.items if i.kind == "redirect" and ">" in i.raw]
    reader = _piped_into(script, command)
    if reader is not None and head in ("cat", "tee"):
        head, words = reader
    if (head in SHELLS and "-c" not in words) or any(t.endswith((".sh", ".bash")) for t in targets):
        return "shell"
    if PYTHON.fullmatch(head) or any(t.endswith(".py") for t in targets) or PYTHON_SHEBANG.match(first_line):
        return "python"
    if SHELL_SHEBANG.match(first_line):
        return "shell"
    return "message" if head in PRINTERS and not targets and reader is None else "data"


def _program(command: Command) -> tuple[str, list[str]]:
    """The program a command runs (past ``sudo``, ``env A=1``...) and its words from there."""
    words = [w.value for w in command.words]
    while words and (os.path.basename(words[0]) in PREFIXES or re.match(r"[A-Za-z_]\w*=", words[0])):
        words = words[1:]
    return (os.path.basename(words[0]) if words else ""), words


def _piped_into(script: ShellScript, command: Command) -> tuple[str, list[str]] | None:
    """The program the output of ``command`` is piped into (``cat <<EOF | ssh host bash``)."""
    if command.after is None or command.after[0] not in ("|", "|&"):
        return None
    following = next((c for c in script.commands if c.start == command.after[2]), None)
    return _program(following) if following is not None else None
