"""Heredocs: what a ``<<`` body holds (a shell script that is run or written to a file, Python, data or a
message) from the command around it and its shebang.
"""

from __future__ import annotations

import os
import re

from neuron_migrate.migrate.shell import Command, ShellScript
from neuron_migrate.rules.pip_commands import PYTHON


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
