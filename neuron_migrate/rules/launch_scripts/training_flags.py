"""The TrainingArguments flags on a launch line: the Neuron-only ones (NM512) with why each goes, the
zero_1 and core-count texts, and the flags the target transformers release changed or removed (NM517).
"""

from __future__ import annotations

from dataclasses import dataclass

from neuron_migrate.migrate.shell import Command, ShellScript
from neuron_migrate.rules.hf_fields import (
    DROPPED_FIELDS,
    NEURON_ONLY_FIELDS,
    PARALLEL_FIELDS,
    RENAMED_FIELDS,
    REVIEWED_FIELDS,
    REVIEWED_HARMLESS,
    SFT_RENAMED,
    VERSIONED_FIELDS,
    installed_fields,
    parses_sft_config,
    table_says,
)
from neuron_migrate.rules.launch_scripts.cli_steps import _cli_words, _option
from neuron_migrate.rules.launch_scripts.common import TRN1_NODE_CORES
from neuron_migrate.rules.launch_scripts.launchers import (
    PASS_THROUGH,
    Arg,
    Launch,
    flag_name,
    is_hf_job,
    own_flags,
    script_source,
)


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


def _trn1_node_count(script: ShellScript, command: Command) -> str | None:
    """The launch's ``--nproc_per_node`` when it is a whole trn1.32xlarge's NeuronCore count."""
    count = _option(_cli_words(script, command), "--nproc_per_node", "--nproc-per-node")
    return count if count == TRN1_NODE_CORES else None


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
