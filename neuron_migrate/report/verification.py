"""The result of ``neuron-migrate verify``: plain dataclasses that its renderers read and ``to_dict`` writes.

Like the rewrite report, the model holds everything a renderer shows; nothing is formatted here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

VERIFICATION_SCHEMA = "1.1"

EQUAL = "equal"
DIFFERENT = "different"
FAILED = "failed"  # a side did not run to the end of what was asked


@dataclass
class SideRun:
    """One side's run: the command, its status and what its recorder saw."""

    name: str  # "legacy" or "migrated"
    script: str
    command: list[str]
    cwd: str
    device: str
    returncode: int | None
    seconds: float
    steps: int  # optimizer steps recorded
    stopped: bool  # the recorder ended the run after the asked number of steps
    error: str = ""  # why the side failed, in a sentence
    output_tail: str = ""  # the end of its stderr and stdout, for a failed side
    network: list[str] = field(default_factory=list)  # hosts it tried to reach
    environment: dict[str, str] = field(default_factory=dict)  # variables that change numerics
    kind: str = "legacy"  # what the side runs: "legacy" (torch_xla) or "cuda" for the original, "neuron" migrated


@dataclass
class StepRow:
    step: int
    legacy_loss: float | None
    migrated_loss: float | None
    loss_difference: float | None  # relative
    parameter_difference: float | None  # the largest relative difference over the parameters after the step
    equal: bool


@dataclass
class OutputRow:
    """One outermost model call (or ``generate``) of a program that made no optimizer step."""

    index: int
    what: str  # the model's class, or "generate"
    at: str  # path:line of the call, on the migrated side
    legacy_norm: float | None
    migrated_norm: float | None
    difference: float | None
    equal: bool


@dataclass
class Edit:
    """An edit or a marker of the rewrite that may explain a divergence."""

    rule: str
    path: str
    line: int
    message: str
    risks: list[str] = field(default_factory=list)


@dataclass
class Divergence:
    step: int
    what: str  # "batch", "output", "loss", "gradient", "parameter", "initial parameter", "count", "device",
    # "ranks": the migrated ranks part from each other (legacy and migrated then hold rank 0's and the other's)
    tensor: str  # the tensor's name, or what was compared
    legacy: str
    migrated: str
    difference: float | None  # relative, when both are numbers
    cause: str = ""  # the likely cause in a sentence, when one is known
    fix: str = ""
    edits: list[Edit] = field(default_factory=list)
    at: str = ""  # path:line of the migrated program's call that made the diverging value


@dataclass
class Verification:
    legacy: SideRun
    migrated: SideRun
    outcome: str
    rtol: float
    steps_asked: int
    nproc: int
    rows: list[StepRow] = field(default_factory=list)
    outputs: list[OutputRow] = field(default_factory=list)  # filled when no optimizer step was made
    divergence: Divergence | None = None
    compared: dict[str, int] = field(default_factory=dict)  # how many values of each kind were compared
    notes: list[str] = field(default_factory=list)
    schema: str = VERIFICATION_SCHEMA

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
