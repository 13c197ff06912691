"""The readiness card as data: its problems, its verdict, and how the two relate (no torch here: the command
line, the table and the static audit read cards without running one)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

READY, WARNINGS, NOT_READY, NOT_BUILT = "ready", "ready with warnings", "not ready", "not built"
UNCHECKED = "not checked without the device"
VERDICTS = (READY, WARNINGS, UNCHECKED, NOT_READY, NOT_BUILT)
UNCHECKED_SEVERITY = "unchecked"
ONLY_THE_DEVICE = ("the emulator runs this op on the CPU, which has no kernel for it: only the device can say "
                   "whether it has one; make the card on a Trainium host")
NO_DEVICE_NOTE = "op coverage not checked without the device: the emulator runs every op on the CPU"
REFUSED_DTYPES = {"torch.float64": "float64 is not supported by the neuron backend: cast the model to float32 "
                                   "or bfloat16 (model.to(torch.float32))"}


@dataclass
class Problem:
    phase: str  # build, dtypes, forward, generate, train
    # "error" makes the model not ready, "warning" ready with warnings, "unchecked" an op only the device can judge
    severity: str
    what: str
    where: str = ""  # transformers/models/llama/modeling_llama.py:123
    fix: str = ""
    rule: str = ""  # the audit hazard id when the runtime analyzer found it


@dataclass
class Card:
    architecture: str  # the model_type
    source: str  # what the user named
    model_class: str = ""
    generates: bool | None = None  # whether the model has generate() (an encoder has not)
    kind: str = "transformers"  # the library of the model: transformers, or diffusers (a denoising loop)
    verdict: str = NOT_BUILT
    parameters: int = 0
    decode_graphs: int | None = None
    generate_recompiles: int | None = None
    train_graphs: int | None = None
    train_graph_breaks: int | None = None
    train_recompiles: int | None = None
    host_syncs: int = 0  # data-dependent ops and host syncs in the model's own code
    device: str = ""
    seconds: float = 0.0
    versions: dict[str, str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Card:
        data = dict(data)
        data["problems"] = [Problem(**p) for p in data.get("problems", [])]
        return cls(**data)

    @property
    def first_problem(self) -> Problem | None:
        ranked = sorted(self.problems, key=lambda p: p.severity != "error")
        return ranked[0] if ranked else None

    def headline_ok(self) -> bool:
        """Generates with a static cache in compiled decode graphs without a recompile, and trains a compiled
        step without a graph break or recompile."""
        decodes = self.decode_graphs is None and self.generates is False or (
            bool(self.decode_graphs) and self.generate_recompiles == 0)
        ran = not any(p.severity in ("error", UNCHECKED_SEVERITY) for p in self.problems)
        return ran and decodes and bool(self.train_graphs) and self.train_graph_breaks == 0 and self.train_recompiles == 0


def verdict(card: Card) -> str:
    if card.model_class == "" or any(p.phase == "build" for p in card.problems):
        return NOT_BUILT
    if any(p.severity == "error" for p in card.problems):
        return NOT_READY
    if any(p.severity == UNCHECKED_SEVERITY for p in card.problems):
        return UNCHECKED
    if card.problems or not card.headline_ok():
        return WARNINGS
    return READY


