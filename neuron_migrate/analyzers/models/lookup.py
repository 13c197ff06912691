"""The shipped table of readiness cards, read without torch: what the static audit says of an architecture a
project loads."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

TABLE = Path(__file__).with_name("cards.json")


@lru_cache(maxsize=1)
def table() -> dict:
    try:
        return json.loads(TABLE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"rows": {}, "versions": {}}


def card_row(model_type: str) -> dict | None:
    return table()["rows"].get(model_type)


def versions() -> str:
    return ", ".join(f"{k} {v}" for k, v in table().get("versions", {}).items())


# what follows the architecture's name in a class name: LlamaForCausalLM, LlamaModel, FluxTransformer2DModel
HEAD = re.compile(r"(For[A-Z]\w*|PreTrainedModel|Model|Config)$")


def class_stem(name: str) -> str:
    return HEAD.sub("", name)


def _by_stem() -> dict[str, str]:
    """The architecture of each class stem the table's cards were made with; a stem two architectures share is
    left out (it names neither for sure)."""
    found: dict[str, str | None] = {}
    for model_type, row in table()["rows"].items():
        stem = class_stem(row.get("model_class") or "")
        if stem:
            found[stem] = model_type if found.get(stem, model_type) == model_type else None
    return {stem: model_type for stem, model_type in found.items() if model_type}


def model_type_of_class(name: str) -> str | None:
    """The architecture a concrete model or config class belongs to (``Qwen2ForCausalLM`` -> qwen2), from the
    classes of the table's cards; None for an auto class or a class the table does not know."""
    if name.startswith(("Auto", "TF", "Flax")):
        return None
    return _by_stem().get(class_stem(name))

