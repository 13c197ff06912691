"""Model readiness cards: will an architecture of transformers or diffusers run well on the neuron device?

``tiny`` builds a tiny random model of an architecture from its config, ``card`` runs it through a forward
pass, ``generate()`` with a static cache and a compiled training step under the runtime analyzer (``inputs``
says what a language or vision model reads), ``diffusion`` does the same for a diffusers model with a compiled
denoising loop instead of ``generate()``, ``runs``
makes each card in a process of its own, ``table`` makes the card of every architecture and the shipped table
that the static audit reads (``lookup``).
"""

from __future__ import annotations

from neuron_migrate.analyzers.models import text
from neuron_migrate.analyzers.models.recipes import RECIPES
from neuron_migrate.analyzers.models.model import NOT_BUILT, NOT_READY, READY, VERDICTS, WARNINGS, Card, Problem
from neuron_migrate.analyzers.models.runs import cards_in_processes
from neuron_migrate.analyzers.models.tiny import TinyConfigError, read_spec

DIFFUSERS_CLASSES = tuple(sorted(RECIPES))  # the diffusers classes a card can be made of

NOT_READY_VERDICTS = (NOT_READY, NOT_BUILT)

__all__ = ["NOT_BUILT", "NOT_READY", "NOT_READY_VERDICTS", "READY", "VERDICTS", "WARNINGS", "Card", "Problem",
           "TinyConfigError", "cards_in_processes", "check_spec", "read_spec", "text"]


def check_spec(spec: str) -> str:
    """Why ``spec`` cannot name an architecture ("" when it can): a missing file, a config without a
    model_type, or a model_type this transformers does not know."""
    try:
        found = read_spec(spec)
    except TinyConfigError as exc:
        return str(exc)
    if found.model_type in DIFFUSERS_CLASSES:
        return ""
    if "_class_name" in found.config:
        return (f"--model: no tiny recipe for the diffusers class {found.model_type!r} "
                f"(known: {', '.join(DIFFUSERS_CLASSES)})")
    try:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    except ImportError:
        return "--model needs transformers: pip install transformers"
    if found.model_type not in CONFIG_MAPPING_NAMES and not found.folder:
        return f"--model: {found.model_type!r} is not a model_type of transformers {_version()}"
    return ""


def _version() -> str:
    import transformers

    return transformers.__version__
