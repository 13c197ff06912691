"""What kind of program the original side is, and what to do when a CUDA original cannot run here.

An original is either a legacy Neuron program (torch_xla, torch-neuronx, neuronx-distributed, optimum-neuron) or
a CUDA program (``rewrite --from cuda``). ``--original`` says which; without it the original's source does: a
legacy Neuron import makes it legacy (a script with both kinds of code is migrated by both rule families, and
its torch_xla part decides how it runs), else any CUDA use (``torch.cuda``, ``.cuda()``, a ``"cuda"`` string)
makes it CUDA, else the project's ``from = "cuda"`` setting does.

A CUDA original runs in the original's interpreter as it is: on the GPU when that interpreter sees one, else on
the CPU through the program's own fallback (``"cuda" if torch.cuda.is_available() else "cpu"``). A program that
hard-codes CUDA cannot run without a GPU; its records are then made on a GPU host and compared here.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

LEGACY = "legacy"
CUDA = "cuda"
KINDS = (LEGACY, CUDA)

LEGACY_IMPORT = re.compile(
    r"^\s*(?:import|from)\s+(?:torch_xla|torch_neuronx|torch_neuron|neuronx_distributed|libneuronxla|"
    r"optimum\.neuron)\b", re.M)
CUDA_USE = re.compile(r"""torch\.cuda\b|\.cuda\(|["']cuda(?::\d+)?["']|\bnccl\b""")
SKIPPED_FOLDERS = {".git", ".venv", "venv", "node_modules", "__pycache__", "build", "dist"}
MAX_FILES = 400  # a project folder is read for its kind; a huge tree is read in part

# What torch says when a program asks for CUDA that is not there: a CPU-only build, a CUDA build with no GPU or
# driver, a checkpoint saved on a GPU and loaded without map_location, an "nccl" process group.
NO_GPU = re.compile(
    r"Torch not compiled with CUDA enabled|No CUDA GPUs are available|Found no NVIDIA driver|"
    r"CUDA driver initialization failed|no CUDA-capable device is detected|"
    r"Attempting to deserialize object on a CUDA device but torch\.cuda\.is_available\(\) is False|"
    r"The NVIDIA driver on your system is too old|Distributed package doesn't have NCCL built in|"
    r"module 'torch\._C' has no attribute '_cuda_\w+'|"
    r"CUDA error: [^\n]*")


def kind_of(target: Path, script: Path, asked: str | None) -> str:
    """``asked`` when given; else what the original's source says (see the module's notes)."""
    if asked is not None:
        return asked
    sources = [_read(path) for path in _files(target, script)]
    if any(LEGACY_IMPORT.search(text) for text in sources):
        return LEGACY
    if any(CUDA_USE.search(text) for text in sources):
        return CUDA
    return CUDA if _configured_from(target) == CUDA else LEGACY


def _files(target: Path, script: Path) -> list[Path]:
    if not target.is_dir():
        return [script]
    found = [script]
    for path in sorted(target.rglob("*.py")):
        if len(found) >= MAX_FILES:
            break
        if path != script and not SKIPPED_FOLDERS & set(path.relative_to(target).parts):
            found.append(path)
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _configured_from(target: Path) -> str:
    from neuron_migrate.config import ConfigError, load_config

    try:
        return load_config([target]).migrate_from
    except (ConfigError, OSError):
        return LEGACY


def needs_gpu(output: str) -> str:
    """The line of a failed CUDA original's output that says it asked for a GPU that is not there."""
    found = NO_GPU.findall(output)
    return found[-1].strip() if found else ""


def gpu_host_commands(original: str, migrated: str, args: list[str], options_line: list[str]) -> list[str]:
    """The command that records the original on a machine with a GPU (the full comparison runs there too, the
    migrated side on the CPU emulator), and the one that compares those records with the migrated program here."""
    folder = "verify-records"
    tail = ["--", *args] if args else []
    there = ["neuron-migrate", "verify", original, migrated, "--original", CUDA, *options_line,
             "--keep-records", folder, *tail]
    here = ["neuron-migrate", "verify", original, migrated, "--original", CUDA, *options_line,
            "--original-records", f"{folder}/legacy", *tail]
    return [shlex.join(there), shlex.join(here)]
