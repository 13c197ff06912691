"""``neuron-migrate verify --report out.md``: the verification as a pull-request comment.

The verdict and the first divergence come first; the step table is folded in ``<details>`` past a few rows,
and a failed side's last output lines are folded too. A verification is small, so there is no budget to keep.
"""

from __future__ import annotations

from neuron_migrate.report.verification import SideRun, Verification
from neuron_migrate.report.verification_text import difference, explanation, headline, number, shown, verdict

OPEN_ROWS = 12  # a longer step table is folded


def render(result: Verification) -> str:
    said = verdict(result).removeprefix("verify: ")
    blocks = [f"## neuron-migrate verify: {result.outcome}", said[:1].upper() + said[1:], _sides(result)]
    if result.divergence is not None:
        blocks.append(_divergence(result))
    if result.rows:
        blocks.append(_fold(_steps(result), len(result.rows) > OPEN_ROWS, f"{len(result.rows)} steps"))
    elif result.outputs:
        blocks.append(_outputs(result))
    blocks += [_failure(side) for side in (result.legacy, result.migrated) if side.error]
    blocks += [f"> {note}" for note in result.notes]
    return "\n\n".join(blocks) + "\n"


def _sides(result: Verification) -> str:
    rows = [f"| {side.name} | `{_cell(shown(side.script))}` | {_cell(side.device) or '-'} | {side.steps} | "
            f"{side.seconds:.1f} s |" for side in (result.legacy, result.migrated)]
    return "\n".join(["| side | script | device | steps | time |", "|---|---|---|---:|---:|", *rows])


def _divergence(result: Verification) -> str:
    d = result.divergence
    assert d is not None
    lines = [f"**First divergence:** {_cell(headline(d))}", ""]
    lines += [f"- **{label.capitalize()}:** {_cell(text)}" for label, text in explanation(d)]
    if d.edits:
        lines.append("- **Edits and markers of the rewrite that may explain it:**")
        lines += [f"  - `{_cell(shown(e.path))}:{e.line}` {e.rule} {_cell(e.message)}" for e in d.edits]
    return "\n".join(lines)


def _steps(result: Verification) -> str:
    rows = [f"| {r.step} | {number(r.legacy_loss)} | {number(r.migrated_loss)} | {difference(r.loss_difference)} | "
            f"{difference(r.parameter_difference)} | {'equal' if r.equal else '**different**'} |" for r in result.rows]
    return "\n".join(["| step | legacy loss | migrated loss | loss difference | parameter difference | |",
                      "|---:|---:|---:|---:|---:|---|", *rows])


def _outputs(result: Verification) -> str:
    rows = [f"| {r.index} | {_cell(r.what)} | `{_cell(shown(r.at))}` | {number(r.legacy_norm)} | "
            f"{number(r.migrated_norm)} | {difference(r.difference)} | {'equal' if r.equal else '**different**'} |"
            for r in result.outputs]
    return "\n".join(["| call | model | at | legacy norm | migrated norm | difference | |",
                      "|---:|---|---|---:|---:|---:|---|", *rows])


def _failure(side: SideRun) -> str:
    head = f"**The {side.name} side failed:** {_cell(side.error)}"
    if not side.output_tail:
        return head
    return f"{head}\n\n" + _fold(f"```\n{side.output_tail}\n```", True, "its last lines of output")


def _fold(block: str, folded: bool, summary: str) -> str:
    return f"<details><summary>{summary}</summary>\n\n{block}\n\n</details>" if folded else block


def _cell(text: str) -> str:
    # a table cell ends at a pipe, and a line break ends the table
    return text.replace("|", "\\|").replace("\n", " ")
