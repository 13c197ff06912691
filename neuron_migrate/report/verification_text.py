"""``neuron-migrate verify`` in the terminal: the two runs, a table of steps, the first divergence and why.

Plain aligned lines, the same on a terminal and in a CI log, so they can be grepped and pasted in a review.
"""

from __future__ import annotations

import os

from neuron_migrate.report.verification import DIFFERENT, EQUAL, Divergence, OutputRow, SideRun, StepRow, Verification

HEAD_ROWS, TAIL_ROWS = 10, 5  # a long run shows its first and last steps, and the one that parted


def render(result: Verification) -> str:
    lines = [*_sides(result), ""]
    if result.rows:
        lines += [*_table(result), ""]
    elif result.outputs:
        lines += [*_output_table(result.outputs), ""]
    for side in (result.legacy, result.migrated):
        if side.error:
            lines += [*_failure(side), ""]
    if result.divergence is not None:
        lines += [*_divergence(result), ""]
    lines += [f"note: {note}" for note in result.notes]
    lines.append(verdict(result))
    return "\n".join(lines) + "\n"


def verdict(result: Verification) -> str:
    counted = sum(result.compared.values())
    if result.outcome == EQUAL and not result.rows:
        calls = len(result.outputs)
        return f"verify: equal: {calls} model {_plural(calls, 'output')} compared within rtol {result.rtol:g}"
    if result.outcome == EQUAL:
        return (f"verify: equal: {len(result.rows)} {_plural(len(result.rows), 'step')}, {counted} values compared "
                f"within rtol {result.rtol:g}")
    if result.outcome == DIFFERENT and result.divergence and result.divergence.what == "device":
        return "verify: different: the migrated program ran on the CPU, not on the neuron device"
    if result.outcome == DIFFERENT and result.divergence and result.divergence.what == "ranks":
        return (f"verify: different: the migrated ranks part from each other after step {result.divergence.step}: "
                "they do not average their gradients")
    if result.outcome == DIFFERENT:
        d = result.divergence
        where = f"step {d.step}, {_subject(d)}" if d else "see above"
        return f"verify: different: the programs part at {where}"
    if result.legacy.kind == "cuda" and result.legacy.error.startswith("needs a GPU"):
        return "verify: could not compare: the CUDA original needs a GPU and none is here (see the commands above)"
    failed = " and ".join(side.name for side in (result.legacy, result.migrated) if side.error) or "a side"
    parted = f"; the programs had parted before, at step {result.divergence.step}" if result.divergence else ""
    return f"verify: could not compare: the {failed} side did not run to the end{parted}"


def _sides(result: Verification) -> list[str]:
    return [f"{side.name:>8}: {shown(side.script)}{' (CUDA)' if side.kind == 'cuda' else ''}"
            f"{f' on {side.device}' if side.device else ''}, "
            f"{side.seconds:.1f} s, {side.steps} {_plural(side.steps, 'step')}{_env(side)}"
            for side in (result.legacy, result.migrated)]


def _env(side: SideRun) -> str:
    shown_vars = {k: v for k, v in side.environment.items() if k != "PJRT_DEVICE"}
    return "".join(f", {k}={v}" for k, v in sorted(shown_vars.items()))


def _table(result: Verification) -> list[str]:
    header = f"{'step':>5}  {'legacy loss':>14}  {'migrated loss':>14}  {'loss diff':>9}  {'params diff':>11}"
    rows = _shown_rows(result)
    lines = [header]
    previous = -1
    for row in rows:
        if row.step != previous + 1:
            lines.append(f"{'...':>5}")
        lines.append(_row(row))
        previous = row.step
    return lines


def _shown_rows(result: Verification) -> list[StepRow]:
    rows = result.rows
    if len(rows) <= HEAD_ROWS + TAIL_ROWS:
        return rows
    keep = {row.step for row in rows[:HEAD_ROWS] + rows[-TAIL_ROWS:]}
    if result.divergence is not None:
        keep.add(result.divergence.step)
    return [row for row in rows if row.step in keep]


def _row(row: StepRow) -> str:
    status = "equal" if row.equal else "DIFFERENT"
    return (f"{row.step:>5}  {number(row.legacy_loss):>14}  {number(row.migrated_loss):>14}  "
            f"{difference(row.loss_difference):>9}  {difference(row.parameter_difference):>11}  {status}")


def _output_table(outputs: list[OutputRow]) -> list[str]:
    lines = [f"{'call':>5}  {'model':<16}  {'legacy norm':>14}  {'migrated norm':>14}  {'diff':>9}  at"]
    for row in outputs[:HEAD_ROWS + TAIL_ROWS]:
        status = "equal" if row.equal else "DIFFERENT"
        lines.append(f"{row.index:>5}  {row.what[:16]:<16}  {number(row.legacy_norm):>14}  "
                     f"{number(row.migrated_norm):>14}  {difference(row.difference):>9}  {shown(row.at)}  {status}")
    if len(outputs) > HEAD_ROWS + TAIL_ROWS:
        lines.append(f"{'...':>5}  {len(outputs) - HEAD_ROWS - TAIL_ROWS} more")
    return lines


def number(value: float | None) -> str:
    return "-" if value is None else f"{value:.8g}"


def difference(value: float | None) -> str:
    if value is None:
        return "-"
    return "0" if value == 0 else f"{value:.1e}"


def _divergence(result: Verification) -> list[str]:
    d = result.divergence
    assert d is not None
    lines = [f"first divergence: {headline(d)}"]
    lines += [f"  {label}: {text}" for label, text in explanation(d)]
    if d.edits:
        lines.append("  edits and markers of the rewrite that may explain it:")
        lines += [f"    {shown(e.path)}:{e.line}: {e.rule} {e.message}" for e in d.edits]
    return lines


def explanation(d: Divergence) -> list[tuple[str, str]]:
    """Where the diverging value was made, its likely cause and the fix, those that are known."""
    items = [("at", shown(d.at) if d.at else ""), ("likely cause", d.cause), ("fix", d.fix)]
    return [(label, text) for label, text in items if text]


MODEL_WIDE = ("parameter", "gradient", "initial parameter")  # compared over the whole model at once


def headline(d: Divergence) -> str:
    if d.what == "device":
        return f"the migrated program computed on {d.migrated}, not on the neuron device"
    if d.what == "ranks":
        size = f", relative difference {d.difference:.2e} over all parameters" if d.difference is not None else ""
        return f"step {d.step}, parameter {d.tensor}: migrated {d.legacy}, {d.migrated}{size}"
    size = f", relative difference {d.difference:.2e}" if d.difference is not None else ""
    if d.difference is not None and d.what in MODEL_WIDE:
        size += f" over all {d.what}s (this one differs most)"
    return f"step {d.step}, {_subject(d)}: legacy {d.legacy}, migrated {d.migrated}{size}"


def _subject(d: Divergence) -> str:
    # a loss is one number: it has no tensor name
    return f"{d.what} {d.tensor}" if d.tensor else d.what


def _failure(side: SideRun) -> list[str]:
    lines = [f"the {side.name} side failed: {side.error}", f"  command: {' '.join(side.command)}",
             f"  in: {shown(side.cwd)}"]
    if side.output_tail:
        lines.append("  its last lines of output:")
        lines += [f"    {line}" for line in side.output_tail.splitlines()]
    return lines


def shown(path: str) -> str:
    """A path relative to the current folder when it is inside it."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"
