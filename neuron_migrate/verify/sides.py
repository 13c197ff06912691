"""Run the legacy program and the migrated one, each under the recorder, side by side.

Each side runs as under ``torchrun --nproc_per_node N``: with one rank the launcher's variables are set
directly (no launcher process), with more ranks ``torch.distributed.run`` starts them. ``launcher=False`` runs
one rank as ``python SCRIPT`` with none of them: a script that takes a distributed branch whenever ``RANK`` is
set (nanoGPT's shape) runs its single-device path then. The legacy side runs
in the user's legacy interpreter; the migrated side on the neuron device when torch-neuronx is installed,
otherwise on the CPU emulator. Both read the same seeds and, unless allowed otherwise, no network.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

SITE = Path(__file__).resolve().parent / "site"
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
LAUNCHER_VARS = ("LOCAL_RANK", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_WORLD_SIZE",
                 "GROUP_RANK", "ROLE_RANK", "TORCHELASTIC_RUN_ID")
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
# Variables that change what a legacy program computes: shown with the result, since a divergence may be theirs.
NUMERIC_VARS = ("XLA_USE_BF16", "XLA_DOWNCAST_BF16", "XLA_USE_32BIT_LONG", "NEURON_RT_STOCHASTIC_ROUNDING_EN",
                "PJRT_DEVICE")


@dataclass
class Options:
    steps: int = 10
    rtol: float = 1e-5
    nproc: int = 1
    legacy_nproc: int | None = None  # the legacy side's ranks when it cannot run --nproc (default: the same)
    legacy_args: list[str] = field(default_factory=list)  # appended to the legacy program's arguments
    seed: int = 0
    timeout: float = 600.0
    allow_network: bool = False
    no_dropout: bool = False
    legacy_env: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # both sides
    original: str | None = None  # "legacy" or "cuda" (verify/original.py); None: read from the original's source
    original_records: Path | None = None  # compare these records of the original instead of running it
    launcher: bool = True  # one rank still gets torchrun's variables; off: run as `python SCRIPT` (RANK unset)


@dataclass
class Side:
    name: str
    python: str
    script: Path
    args: list[str]
    records: Path
    env: dict[str, str]
    runner: list[str] = field(default_factory=list)  # what runs the script in that interpreter
    device: str = "cpu"
    nproc: int = 1
    kind: str = "legacy"  # the original's kind ("legacy" or "cuda"); "neuron" for the migrated side

    @property
    def cwd(self) -> Path:
        return self.script.parent

    def command(self) -> list[str]:
        nproc = self.nproc
        program = [*self.runner, str(self.script), *self.args]
        if nproc == 1:
            return [self.python, *program]
        # torchrun takes "-m module args" (the emulator's runner) as well as a script path
        launcher = [self.python, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
                    "--master_addr", "127.0.0.1", "--master_port", self.env["MASTER_PORT"]]
        return [*launcher, *program]


@dataclass
class Finished:
    side: Side
    command: list[str]
    returncode: int | None
    seconds: float
    stdout: str
    stderr: str
    timed_out: bool = False
    cancelled: bool = False  # stopped because the other side had failed


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def ranks(name: str, options: Options) -> int:
    if name == "legacy" and options.legacy_nproc:
        return options.legacy_nproc
    return options.nproc


def environment(name: str, records: Path, options: Options, extra_path: list[str],
                kind: str = "legacy") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    env.update(options.env)
    if name == "legacy" and kind == "legacy":
        env.setdefault("PJRT_DEVICE", "CPU")  # a CUDA original picks its own device
    if name == "legacy":
        env.update({k: v for k, v in options.legacy_env.items() if k != "PYTHONPATH"})
    if not options.allow_network:
        env.update(OFFLINE)
    user_path = [options.legacy_env["PYTHONPATH"]] if name == "legacy" and "PYTHONPATH" in options.legacy_env else []
    paths = [str(SITE), *extra_path, *user_path, env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env["PYTHONHASHSEED"] = str(options.seed)
    env["TOKENIZERS_PARALLELISM"] = "false"
    # the recorder's settings (verify/site/sitecustomize.py reads these names; it cannot import them)
    env["NEURON_MIGRATE_VERIFY_RECORD"] = str(records)
    env["NEURON_MIGRATE_VERIFY_STEPS"] = str(options.steps)
    env["NEURON_MIGRATE_VERIFY_SEED"] = str(options.seed)
    env["NEURON_MIGRATE_VERIFY_NETWORK"] = "1" if options.allow_network else "0"
    env["NEURON_MIGRATE_VERIFY_NO_DROPOUT"] = "1" if options.no_dropout else "0"
    env["MASTER_ADDR"], env["MASTER_PORT"] = "127.0.0.1", str(free_port())
    if ranks(name, options) == 1 and options.launcher:
        env.update({"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1"})
    return env


def legacy_side(python: str, script: Path, args: list[str], work: Path, options: Options,
                kind: str = "legacy") -> Side:
    records = work / "legacy"
    records.mkdir(parents=True, exist_ok=True)
    return Side("legacy", python, script, [*args, *options.legacy_args], records,
                environment("legacy", records, options, [], kind), device="legacy", nproc=ranks("legacy", options),
                kind=kind)


def recorded(side: Side, folder: Path) -> Finished:
    """The original side as a run on another machine left it (``--keep-records`` there): its records and
    output, read instead of running it here."""
    side.records = folder
    texts = [(folder / name).read_text(encoding="utf-8", errors="replace") if (folder / name).is_file() else ""
             for name in ("stdout.txt", "stderr.txt")]
    return Finished(side, [], 0, 0.0, texts[0], texts[1])


def migrated_side(script: Path, args: list[str], work: Path, options: Options, real_device: bool) -> Side:
    records = work / "migrated"
    records.mkdir(parents=True, exist_ok=True)
    env = environment("migrated", records, options, [PACKAGE_ROOT])
    if real_device:
        return Side("migrated", sys.executable, script, args, records, env, device="neuron", nproc=options.nproc,
                    kind="neuron")
    runner = ["-m", "neuron_migrate.analyzers.emulator"]
    return Side("migrated", sys.executable, script, args, records, env, runner, "neuron (emulated on CPU)",
                options.nproc, kind="neuron")


def run_both(sides: list[Side], timeout: float) -> list[Finished]:
    """Start every side at once and wait for all. A side past ``timeout`` seconds is stopped, and so are the
    others once one fails before it recorded a step or an output: there is nothing to compare them with. A side
    that failed later lets the others run, so that the steps before the failure are compared."""
    running = [_start(side) for side in sides]
    ended: dict[int, tuple[float, str]] = {}
    try:
        while len(ended) < len(running):
            failed = any(running[i][2].returncode not in (0, None) and why == "" and not _recorded(running[i][0])
                         for i, (_, why) in ended.items())
            for index, (side, command, process, began) in enumerate(running):
                if index in ended:
                    continue
                why = "timeout" if time.monotonic() - began > timeout else "cancelled" if failed else ""
                if process.poll() is None and why:
                    _stop_group(process)
                if process.poll() is not None:
                    ended[index] = (time.monotonic() - began, why)
            time.sleep(0.05)
    except KeyboardInterrupt:
        for _, _, process, _ in running:
            _stop_group(process)
        raise
    return [_finished(*entry, *ended[index]) for index, entry in enumerate(running)]


def _recorded(side: Side) -> bool:
    for path in side.records.glob("rank*.jsonl"):  # every process of the side
        text = path.read_text(encoding="utf-8", errors="replace")
        if '"kind": "params"' in text or '"kind": "output"' in text:
            return True
    return False


def _start(side: Side) -> tuple[Side, list[str], subprocess.Popen, float]:
    command = side.command()
    # output goes to files: a pipe that nobody reads while the program runs could fill and stall it
    with open(side.records / "stdout.txt", "wb") as out, open(side.records / "stderr.txt", "wb") as err:
        process = subprocess.Popen(command, cwd=side.cwd, env=side.env, stdout=out, stderr=err,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    return side, command, process, time.monotonic()


def _finished(side: Side, command: list[str], process: subprocess.Popen, began: float, seconds: float,
              why: str) -> Finished:
    texts = [(side.records / name).read_text(encoding="utf-8", errors="replace")
             for name in ("stdout.txt", "stderr.txt")]
    return Finished(side, command, process.returncode, seconds, texts[0], texts[1], why == "timeout",
                    why == "cancelled")


def _stop_group(process: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
            process.wait(timeout=5)
            return
        except (ProcessLookupError, subprocess.TimeoutExpired):
            continue
