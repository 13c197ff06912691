"""What the CUDA launch rules share: documentation links, the base class, finding a launcher option."""

from __future__ import annotations

from dataclasses import dataclass

from neuron_migrate.migrate.shell import WORD, Command, Word
from neuron_migrate.rules.launch_scripts.common import NEURON_DOCS, ShellRule

DOCS_TORCH_NEURON = f"{NEURON_DOCS}/torch/index.html"
DOCS_RUNTIME_ENV = f"{NEURON_DOCS}/neuron-runtime/api/nrt-env-var-reference.html"
DOCS_TOOLS = f"{NEURON_DOCS}/tools/neuron-sys-tools/index.html"
DOCS_DLC = f"{NEURON_DOCS}/setup/pytorch/dlc.html"
DOCS_DLC_IMAGES = "https://github.com/aws-neuron/deep-learning-containers"
DOCS_TORCHRUN = "https://pytorch.org/docs/stable/elastic/run.html"
DOCS_ACCELERATE_LAUNCH = "https://huggingface.co/docs/accelerate/package_reference/cli#accelerate-launch"


class CudaShellRule(ShellRule):
    """A launch-script rule of CUDA code: it runs with ``--from cuda`` only."""

    source = "cuda"


@dataclass(frozen=True)
class Option:
    """A launcher option written in the command: ``--name=value`` (one word) or ``--name value`` (two)."""

    name: Word
    value: Word | None  # None: the option has no value in this command (the last word)
    inline: bool  # --name=value

    @property
    def text(self) -> str:
        if self.inline:
            return self.name.value.split("=", 1)[1]
        return self.value.value if self.value is not None else ""

    def value_span(self) -> tuple[int, int] | None:
        """Where the value is written, without the quotes of a plain quoted word; None when it cannot be edited."""
        word = self.name if self.inline else self.value
        if word is None:
            return None
        raw, value = word.raw, self.text
        if self.inline:
            at = raw.find("=") + 1
            rest = raw[at:]
        else:
            at, rest = 0, raw
        if rest == value:
            return word.start + at, word.end
        if len(rest) == len(value) + 2 and rest[0] == rest[-1] and rest[0] in "'\"" and rest[1:-1] == value:
            return word.start + at + 1, word.end - 1
        return None


def options(command: Command, names: frozenset[str]) -> list[Option]:
    """The options of ``command`` named ``names`` (both spellings given by the caller), as written."""
    words = [item for item in command.items if item.kind == WORD]
    out = []
    for i, word in enumerate(words):
        name, has_value, _ = word.value.partition("=")
        if name not in names:
            continue
        if has_value:
            out.append(Option(word, None, True))
        else:
            out.append(Option(word, words[i + 1] if i + 1 < len(words) else None, False))
    return out
