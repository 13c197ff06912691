"""A card for the terminal, for Markdown and as an HTML page."""

from __future__ import annotations

import html

from neuron_migrate.analyzers.models.model import Card, Problem
from neuron_migrate.report import html as report_html


def card_text(card: Card) -> str:
    size = f", {card.parameters:,} parameters" if card.parameters else ""
    lines = [f"{card.source} ({card.model_class or 'no model'}{size}): {card.verdict}"]
    lines += [f"  {name:<9} {text}" for name, text in _phases(card)]
    for problem in card.problems:
        lines += _problem_lines(problem)
    lines += [f"  note: {note}" for note in card.notes]
    versions = ", ".join(f"{k} {v}" for k, v in card.versions.items())
    lines.append(f"  {card.seconds:.1f} s on {card.device or 'no device'}" + (f"; {versions}" if versions else ""))
    return "\n".join(lines)


def _phases(card: Card) -> list[tuple[str, str]]:
    if card.decode_graphs is None and card.train_graphs is None:
        return []
    phases = []
    if card.decode_graphs is not None and card.kind == "diffusers":
        phases.append(("denoise", f"compiled: {_n(card.decode_graphs, 'graph')}, "
                                  f"{_n(card.generate_recompiles or 0, 'recompile')} over 4 timesteps"))
    elif card.decode_graphs is not None:
        phases.append(("generate", f"static cache: {_n(card.decode_graphs, 'decode graph')}, "
                                   f"{_n(card.generate_recompiles or 0, 'recompile')}; the prefill runs eager"))
    if card.train_graphs is not None:
        phases.append(("train", f"compiled: {_n(card.train_graphs, 'graph')}, "
                                f"{_n(card.train_graph_breaks or 0, 'graph break')}, "
                                f"{_n(card.train_recompiles or 0, 'recompile')} over 2 steps of equal shapes"))
    return phases


def _problem_lines(problem: Problem) -> list[str]:
    where = f" {problem.where}" if problem.where else ""
    lines = [f"  {problem.severity} [{problem.phase}]{where}: {problem.what}"]
    if problem.fix:
        lines.append(f"      fix: {problem.fix}")
    return lines


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def card_markdown(card: Card) -> str:
    lines = [f"## {card.source}: {card.verdict}", "",
             f"`{card.model_class}`, {card.parameters:,} parameters (tiny), {card.seconds:.1f} s on {card.device}.", ""]
    lines += [f"- {name}: {text}" for name, text in _phases(card)]
    if card.problems:
        lines += ["", "| severity | phase | where | problem | fix |", "|---|---|---|---|---|"]
        lines += [f"| {p.severity} | {p.phase} | `{p.where}` | {_cell(p.what)} | {_cell(p.fix)} |"
                  for p in card.problems]
    lines += [""] + [f"> {note}" for note in card.notes]
    return "\n".join(lines).rstrip() + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


STYLE = ("body{font:14px/1.45 system-ui,sans-serif;margin:2em;max-width:72em}table{border-collapse:collapse}"
         "td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}"
         ".error{color:#b00}.warning{color:#a60}.unchecked{color:#06a}code{font-size:90%}")


def cards_html(cards: list[Card]) -> str:
    """The cards as one self-contained page (no scripts, no external files)."""
    body = "".join(_card_html(card) for card in cards)
    return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>Model readiness</title>"
            f"<style>{STYLE}</style></head><body><h1>Model readiness on the neuron device</h1>{body}</body></html>\n")


SECTION_ID = "model-readiness"


def embed(page: str, cards: list[Card]) -> str | None:
    """A rewrite or audit report ``page`` with the cards as its last section (replacing earlier cards), or None
    when ``page`` is not such a report."""
    cards_part = "".join(_card_html(card, level=3) for card in cards)
    section = (f'<section id="{SECTION_ID}"><style>{STYLE_IN_REPORT}</style><h2>Model readiness on the neuron '
               f"device</h2>{cards_part}</section>")
    return report_html.embed(page, SECTION_ID, section)


# inside a report the page's own look stays: only the severities get their colors
STYLE_IN_REPORT = ("#model-readiness .error{color:#b00}#model-readiness .warning{color:#a60}"
                   "#model-readiness .unchecked{color:#06a}")


def _card_html(card: Card, level: int = 2) -> str:
    e = html.escape
    phases = "".join(f"<li>{e(name)}: {e(text)}</li>" for name, text in _phases(card))
    rows = "".join(f"<tr><td class=\"{e(p.severity)}\">{e(p.severity)}</td><td>{e(p.phase)}</td>"
                   f"<td><code>{e(p.where)}</code></td><td>{e(p.what)}</td><td>{e(p.fix)}</td></tr>"
                   for p in card.problems)
    table = (f"<table><tr><th>severity</th><th>phase</th><th>where</th><th>problem</th><th>fix</th></tr>{rows}"
             f"</table>") if rows else ""
    notes = "".join(f"<p><em>{e(note)}</em></p>" for note in card.notes)
    return (f"<div class=\"card\"><h{level}>{e(card.source)}: {e(card.verdict)}</h{level}><p><code>"
            f"{e(card.model_class)}</code>, "
            f"{card.parameters:,} parameters (tiny), {card.seconds:.1f} s on {e(card.device)}</p>"
            f"<ul>{phases}</ul>{table}{notes}</div>")
