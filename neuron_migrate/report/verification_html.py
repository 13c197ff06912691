"""``neuron-migrate verify --report out.html``: the verification as a self-contained page.

The page has the report's look (same style sheet, no external assets, no script) and one section of its own:
both loss curves drawn as an inline SVG, the step table, the first divergence with its likely cause and the
edits that touch it, and each side's command.
"""

from __future__ import annotations

import math

from neuron_migrate.report import html
from neuron_migrate.report.html import STYLE, esc
from neuron_migrate.report.verification import SideRun, Verification
from neuron_migrate.report.verification_text import difference, explanation, headline, number, shown, verdict

WIDTH, HEIGHT, PAD = 720, 260, 44
LEFT = 76  # room for the loss labels of the y axis
COLOURS = {"legacy": "#0969da", "migrated": "#cf222e"}
EXTRA_STYLE = """
svg.curves { max-width: 100%; height: auto; background: var(--panel); border: 1px solid var(--line);
  border-radius: 8px; }
svg.curves text { fill: var(--muted); font-size: 11px; }
svg.curves .axis { stroke: var(--line); }
.legend span { display: inline-block; margin-right: 16px; }
.legend i { display: inline-block; width: 18px; height: 3px; vertical-align: middle; margin-right: 6px; }
.verdict { font-weight: 600; }
.verdict.equal { color: var(--safe); } .verdict.different, .verdict.failed { color: var(--manual); }
"""


def render(result: Verification) -> str:
    body = ["<header><h1>neuron-migrate verify</h1>",
            f'<p class="meta">{esc(result.legacy.script)} against {esc(result.migrated.script)} · '
            f"rtol {result.rtol:g} · {result.nproc} {'rank' if result.nproc == 1 else 'ranks'}</p></header>",
            "<main>", section(result), "</main>",
            f"<footer>neuron-migrate verify · schema {esc(result.schema)}</footer>"]
    policy = "default-src 'none'; style-src 'unsafe-inline'"
    return "\n".join(["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
                      f'<meta http-equiv="Content-Security-Policy" content="{policy}">',
                      '<meta name="viewport" content="width=device-width, initial-scale=1">',
                      "<title>neuron-migrate verify</title>", f"<style>{STYLE}</style>", "</head>",
                      "<body>", *body, "</body>", "</html>", ""])




def embed(page: str, result: Verification) -> str | None:
    """The rewrite report ``page`` with this verification as its last section (replacing an earlier one), or
    None when ``page`` is not a rewrite report."""
    return html.embed(page, "verification", section(result))


def section(result: Verification) -> str:
    """The verification section, with its own style: what a migration report embeds as it is."""
    parts = [f'<section id="verification"><style>{EXTRA_STYLE}</style><h2>Verification</h2>',
             f'<p class="verdict {esc(result.outcome)}">{esc(verdict(result))}</p>']
    if result.divergence is not None:
        parts.append(divergence(result))
    if result.rows:
        parts += [curves(result), step_table(result)]
    elif result.outputs:
        parts.append(output_table(result))
    for side in (result.legacy, result.migrated):
        parts.append(side_block(side))
    parts += [f"<p>{esc(note)}</p>" for note in result.notes]
    parts.append("</section>")
    return "\n".join(parts)


def curves(result: Verification) -> str:
    series = {"legacy": [(r.step, r.legacy_loss) for r in result.rows if _finite(r.legacy_loss)],
              "migrated": [(r.step, r.migrated_loss) for r in result.rows if _finite(r.migrated_loss)]}
    points = [p for values in series.values() for p in values]
    if not points:
        return ""
    steps = [s for s, _ in points]
    losses = [v for _, v in points]
    x0, x1 = min(steps), max(max(steps), min(steps) + 1)
    y0, y1 = min(losses), max(losses)
    y0, y1 = (y0 - 0.5, y1 + 0.5) if y0 == y1 else (y0, y1)

    def xy(step: float, loss: float) -> str:
        x = LEFT + (step - x0) / (x1 - x0) * (WIDTH - LEFT - PAD)
        y = HEIGHT - PAD - (loss - y0) / (y1 - y0) * (HEIGHT - 2 * PAD)
        return f"{x:.1f},{y:.1f}"

    lines = [f'<polyline fill="none" stroke="{COLOURS[name]}" stroke-width="2" '
             f'stroke-dasharray="{"6 4" if name == "migrated" else "none"}" '
             f'points="{" ".join(xy(s, v) for s, v in values)}"><title>{name} loss</title></polyline>'
             for name, values in series.items() if values]
    axes = (f'<line class="axis" x1="{LEFT}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}"/>'
            f'<line class="axis" x1="{LEFT}" y1="{PAD}" x2="{LEFT}" y2="{HEIGHT - PAD}"/>'
            f'<text x="{LEFT}" y="{HEIGHT - PAD + 16}">step {x0}</text>'
            f'<text x="{WIDTH - PAD}" y="{HEIGHT - PAD + 16}" text-anchor="end">step {max(steps)}</text>'
            f'<text x="{LEFT - 6}" y="{PAD + 4}" text-anchor="end">{y1:.4g}</text>'
            f'<text x="{LEFT - 6}" y="{HEIGHT - PAD}" text-anchor="end">{y0:.4g}</text>')
    marker = ""
    if result.divergence is not None and x1 > x0:
        x = LEFT + (result.divergence.step - x0) / (x1 - x0) * (WIDTH - LEFT - PAD)
        marker = (f'<line x1="{x:.1f}" y1="{PAD}" x2="{x:.1f}" y2="{HEIGHT - PAD}" stroke="#9a6700" '
                  f'stroke-dasharray="2 3"><title>first divergence</title></line>')
    legend = "".join(f'<span><i style="background:{COLOURS[name]}"></i>{name}</span>' for name in series)
    return (f'<h3>Loss per step</h3><svg class="curves" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
            f'aria-label="loss of both programs per optimizer step">{axes}{marker}{"".join(lines)}</svg>'
            f'<p class="legend">{legend}</p>')


def step_table(result: Verification) -> str:
    rows = [[str(r.step), number(r.legacy_loss), number(r.migrated_loss), difference(r.loss_difference),
             difference(r.parameter_difference), _status(r.equal)] for r in result.rows]
    return _table("Steps", ["step", "legacy loss", "migrated loss", "loss difference", "parameter difference", ""],
                  rows)


def output_table(result: Verification) -> str:
    rows = [[str(r.index), esc(r.what), f"<code>{esc(shown(r.at))}</code>", number(r.legacy_norm),
             number(r.migrated_norm), difference(r.difference), _status(r.equal)] for r in result.outputs]
    return _table("Model outputs", ["call", "model", "at", "legacy norm", "migrated norm", "difference", ""], rows)


def _table(title: str, headers: list[str], rows: list[list[str]]) -> str:
    """A titled table of cells that are HTML already."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<h3>{esc(title)}</h3><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _status(equal: bool) -> str:
    return "equal" if equal else "<strong>different</strong>"


def divergence(result: Verification) -> str:
    d = result.divergence
    assert d is not None
    items = [f"<p><strong>First divergence:</strong> {esc(headline(d))}</p>"]
    items += [f"<p><strong>{esc(label.capitalize())}:</strong> {esc(text)}</p>" for label, text in explanation(d)]
    if d.edits:
        edits = "".join(f"<li><code>{esc(shown(e.path))}:{e.line}</code> {esc(e.rule)} {esc(e.message)}</li>"
                        for e in d.edits)
        items.append(f"<p>Edits and markers of the rewrite that may explain it:</p><ul>{edits}</ul>")
    return "\n".join(items)


def side_block(side: SideRun) -> str:
    status = f"failed: {side.error}" if side.error else f"{side.steps} steps in {side.seconds:.1f} s"
    tail = f"<pre>{esc(side.output_tail)}</pre>" if side.output_tail else ""
    device = f"{esc(side.device)} · " if side.device else ""
    return (f"<h3>{esc(side.name.capitalize())} side</h3><p>{device}{esc(status)}</p>"
            f"<pre>{esc(' '.join(side.command))}</pre>{tail}")


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)

