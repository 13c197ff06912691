"""``python -m neuron_migrate.analyzers.models.table``: the card of every architecture transformers can build
a language-model or image-classification head for, in bounded time, written as the shipped table
(``cards.json``, which the static audit reads) and as ``docs/models.md``.

    python -m neuron_migrate.analyzers.models.table --jobs 2 --timeout 300 [--only llama,gpt2] [--docs docs/models.md]

Causal LM architectures first, then seq2seq, then encoders (masked LM), then image classifiers. Each card is
made in a worker process with a time limit; progress goes to stderr. ``--only`` remakes some rows and keeps
the others of the table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from neuron_migrate.analyzers.models.model import (
    NOT_BUILT,
    NOT_READY,
    READY,
    UNCHECKED,
    VERDICTS,
    WARNINGS,
    Card,
)
from neuron_migrate.analyzers.models.recipes import RECIPES
from neuron_migrate.analyzers.models.runs import cards_in_processes

TABLE = Path(__file__).with_name("cards.json")
FAMILIES = (("causal LM", "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES"),
            ("seq2seq LM", "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES"),
            ("masked LM", "MODEL_FOR_MASKED_LM_MAPPING_NAMES"),
            ("image classification", "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES"))
VISION = "image classification"
DIFFUSION = "diffusion (diffusers)"
PUBLISHED = ("AWS's announcement of TorchNeuron: 89% of the 100 most used text-generation architectures work out of "
             "the box on TorchNeuron, 46% on optimum-neuron 0.4.5 (measured on the device, with real weights)")


def architectures() -> list[tuple[str, str]]:
    """(model_type, family) of every architecture with a language-model or image-classification head, each once,
    families in order, then the diffusers classes a card can be made of."""
    from transformers.models.auto import modeling_auto

    seen: dict[str, str] = {}
    for family, mapping in FAMILIES:
        for model_type in getattr(modeling_auto, mapping):
            seen.setdefault(model_type, family)
    return [*seen.items(), *((name, DIFFUSION) for name in sorted(RECIPES))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m neuron_migrate.analyzers.models.table")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300, help="seconds a card may take")
    parser.add_argument("--only", default="", help="comma-separated model types to remake (the rest is kept)")
    parser.add_argument("--table", type=Path, default=TABLE)
    parser.add_argument("--docs", type=Path, default=None, help="also write the Markdown page here")
    options = parser.parse_args(argv)
    wanted = architectures()
    if options.only:
        only = set(options.only.split(","))
        wanted = [(t, f) for t, f in wanted if t in only]
    families = dict(wanted)
    started = time.perf_counter()
    total = len(wanted)
    count = [0]

    def done(card: Card) -> None:
        count[0] += 1
        print(f"[{count[0]}/{total}] {card.architecture}: {card.verdict} ({card.seconds:.0f} s)", file=sys.stderr,
              flush=True)

    cards = cards_in_processes([t for t, _ in wanted], options.jobs, options.timeout, done)
    rows = load(options.table) if options.only else {}
    for card in cards:
        rows[card.architecture] = row(card, families.get(card.architecture, ""))
    table = {"versions": _versions(cards), "seconds": round(time.perf_counter() - started),
             "jobs": options.jobs, "rows": dict(sorted(rows.items()))}
    if options.only and options.table.exists():  # the time and processes of the whole table stay its own
        before = json.loads(options.table.read_text(encoding="utf-8"))
        table["seconds"], table["jobs"] = before.get("seconds", table["seconds"]), before.get("jobs", table["jobs"])
    options.table.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    if options.docs is not None:
        options.docs.write_text(markdown(table), encoding="utf-8")
    return 0


def row(card: Card, family: str) -> dict:
    first = card.first_problem
    return {"family": family, "verdict": card.verdict, "model_class": card.model_class,
            "headline": card.headline_ok(), "decode_graphs": card.decode_graphs,
            "generate_recompiles": card.generate_recompiles, "train_graph_breaks": card.train_graph_breaks,
            "train_recompiles": card.train_recompiles, "seconds": card.seconds,
            "problem": first.what if first else "", "where": first.where if first else "",
            "fix": first.fix if first else ""}


def load(path: Path = TABLE) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("rows", {})
    except (OSError, ValueError):
        return {}


def _versions(cards: list[Card]) -> dict:
    """The releases the cards were made with: transformers and torch, and diffusers for its models."""
    found: dict = {}
    for card in cards:
        for name, version in card.versions.items():
            found.setdefault(name, version)
    return found


def headline(table: dict) -> str:
    rows = [r for r in table["rows"].values() if r["family"] == "causal LM"]
    good = sum(1 for r in rows if r["headline"])
    judged = [r for r in rows if r["verdict"] in (READY, WARNINGS, NOT_READY)]
    return (f"{good} of {len(rows)} causal LM architectures generate with a static cache in compiled decode graphs "
            f"without a recompile, and train a compiled step without a graph break or recompile ({good} of the "
            f"{len(judged)} the emulator could judge, {_percent(good, len(judged))})")


def vision_headline(table: dict) -> str:
    """The image classifiers' line: no generation, so a compiled training step without a graph break, and the
    one recompile transformers causes in every classifier named apart."""
    rows = [r for r in table["rows"].values() if r["family"] == VISION]
    if not rows:
        return ""
    whole = [r for r in rows if r["verdict"] in (READY, WARNINGS) and r["train_graph_breaks"] == 0]
    clean = [r for r in whole if r["train_recompiles"] == 0]
    once = [r for r in whole if "problem_type` switched" in r["problem"]]
    judged = [r for r in rows if r["verdict"] in (READY, WARNINGS, NOT_READY)]
    return (f"{len(whole)} of {len(rows)} image classification architectures run a forward pass and train a "
            f"compiled step without a graph break ({len(whole)} of the {len(judged)} the emulator could judge); "
            f"{len(clean)} of them without a recompile, {len(once)} with the one recompile at the second step that "
            "transformers causes by setting config.problem_type at its first loss (set it before compiling)")


def diffusion_headline(table: dict) -> str:
    rows = [r for r in table["rows"].values() if r["family"] == DIFFUSION]
    if not rows:
        return ""
    good = sum(1 for r in rows if r["headline"])
    return (f"{good} of {len(rows)} diffusion models of diffusers (the UNet of Stable Diffusion and the DiT, PixArt, "
            "SD3, Flux, Sana and Wan transformers) denoise in compiled graphs without a recompile over a schedule "
            "of timesteps, and train a compiled step without a graph break or recompile")


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "none"


def causes(table: dict, top: int = 8) -> list[tuple[int, str]]:
    """The most common first problems across architectures, numbers and names folded together."""
    import re

    counts: dict[str, int] = {}
    for r in table["rows"].values():
        if r["problem"]:
            kind = re.sub(r"`\w+For\w+`", "`<model>`", re.sub(r"\d+", "N", r["problem"]))
            kind = kind if len(kind) <= 140 else kind[:137] + "..."
            counts[kind] = counts.get(kind, 0) + 1
    return sorted(((n, k) for k, n in counts.items()), reverse=True)[:top]


def markdown(table: dict) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in table["versions"].items())
    rows = table["rows"]
    counts = {v: sum(1 for r in rows.values() if r["verdict"] == v) for v in VERDICTS}
    lines = [
        "# Model readiness on the neuron device", "",
        "<!-- generated by `python -m neuron_migrate.analyzers.models.table --docs docs/models.md`; do not edit -->",
        "",
        f"**{headline(table)}.**", "",
        *([f"**{vision_headline(table)}.**", ""] if vision_headline(table) else []),
        *([f"**{diffusion_headline(table)}.**", ""] if diffusion_headline(table) else []),
        f"Made with {versions} on the CPU emulator of the neuron device, in {table['seconds'] // 60} min with "
        f"{table['jobs']} processes: " + ", ".join(f"{n} {v}" for v, n in counts.items() if n) + ".", "",
        "Each row is a tiny random model of the architecture (2 layers, width 64, 4 heads, 512 tokens, 4 experts; "
        "every other field of its config kept) run through a forward pass, `generate()` with a static cache "
        "(transformers compiles the decode step on neuron) and two optimizer steps of a model compiled with the "
        "neuron backend, `automatic_dynamic_shapes` off. An image classifier gets two 64-pixel pictures (8-pixel "
        "patches, two narrow blocks per stage, windows of 2) and its labels, with no generation. A diffusion model "
        "of diffusers is made from a tiny recipe of its class (8 x 8 latents, 8 text tokens, two blocks) and runs a "
        "compiled denoising loop over 4 timesteps instead of `generate()`. "
        "`neuron-migrate audit --model <model_type or config.json>` "
        "prints the full card of one architecture; `audit PATH` looks up the architectures a project loads.", "",
        "What the numbers measure, beside the published one:", "",
        f"- {PUBLISHED}.",
        "- This table: whether the architecture's code compiles to static graphs (no recompile, no graph break) and "
        "runs every op the emulator can run. It does not measure op coverage or speed on the device (the emulator "
        "runs every op on the CPU) and uses no weights, so numerics are not judged. A row *not checked without "
        "the device* stopped on an op the CPU has no kernel for.", "",
        f"Verdicts: *{READY}*: everything ran, decode compiled, the training step compiled whole; *{WARNINGS}*: "
        f"everything ran, with graph breaks, recompiles or host syncs; *{UNCHECKED}*: an op only the device can "
        f"judge; *{NOT_READY}*: a phase failed; *{NOT_BUILT}*: no tiny model could be made.", "",
        "The most common first problems:", "",
        *[f"- {n}: {_cell(kind)}" for n, kind in causes(table)], "",
        "| architecture | family | verdict | first problem | where |", "|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        lines.append(f"| `{name}` | {r['family']} | {r['verdict']} | {_cell(r['problem'])} | "
                     f"{'`' + r['where'] + '`' if r['where'] else ''} |")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= 160 else text[:157] + "..."


if __name__ == "__main__":
    raise SystemExit(main())
