"""One self-contained HTML page: summary, what needs a human, the reviewer checklist, per-file diffs.

No external assets and no framework: the page is often opened from a CI artifact or attached to a
bug report, offline. Everything from the user's code goes through :func:`esc`; the Content-Security-Policy
only lets the page's own script run (pinned by hash), so a ``<script>`` that slipped into a path or a
code line could not execute anyway.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from typing import Any

from neuron_migrate import markers
from neuron_migrate.report.model import (
    FAILED,
    MANUAL,
    REVIEW,
    SAFE,
    SCHEMA_VERSION,
    SKIPPED,
    FileResult,
    Finding,
    Report,
    position,
)
from neuron_migrate.report.render import RISK_GUIDANCE, diff_lines, diff_stats, is_web, location

STYLE = """
:root {
  --bg: #ffffff; --fg: #1f2328; --muted: #656d76; --line: #d0d7de; --panel: #f6f8fa;
  --add-bg: #dafbe1; --add-fg: #116329; --del-bg: #ffebe9; --del-fg: #82071e; --hunk-bg: #ddf4ff;
  --safe: #1a7f37; --review: #9a6700; --manual: #cf222e; --muted-badge: #6e7781;
  --kw: #cf222e; --str: #0a3069; --com: #6e7781; --mark: #8250df;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0d1117; --fg: #e6edf3; --muted: #8d96a0; --line: #30363d; --panel: #161b22;
    --add-bg: #12261e; --add-fg: #7ee787; --del-bg: #2d1215; --del-fg: #ffa198; --hunk-bg: #121d2f;
    --safe: #3fb950; --review: #d29922; --manual: #f85149; --muted-badge: #8d96a0;
    --kw: #ff7b72; --str: #a5d6ff; --com: #8d96a0; --mark: #d2a8ff;
  }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 14px/1.5 -apple-system, BlinkMacSystemFont, "Segoe UI", Helvetica, Arial, sans-serif; }
header, main, footer { max-width: 1200px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 24px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 32px 0 12px; padding-bottom: 6px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 20px 0 6px; }
a { color: inherit; }
code, pre, .code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
/* Paths and code lines have no spaces to break at: without this a long one widens the page. */
code, pre, td, th, summary, li { overflow-wrap: anywhere; }
/* A path breaks where the line ends rather than starting a line of its own. */
summary .path code, ul.checks code, td:first-child > code { word-break: break-all; }
pre { margin: 0; white-space: pre-wrap; }
.meta, .muted { color: var(--muted); }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(130px, 1fr)); gap: 12px; margin-top: 20px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; background: var(--panel); }
.card .n { font-size: 26px; font-weight: 600; }
.card .label { color: var(--muted); }
.card.warn .n { color: var(--review); }
.card.bad .n { color: var(--manual); }
.card.good .n { color: var(--safe); }
table { border-collapse: collapse; width: 100%; table-layout: fixed; }
col.where { width: 9em; } col.rule { width: 5.5em; } col.safety { width: 8em; } col.status { width: 6em; }
col.change { width: 32%; } col.file { width: 35%; }
th, td { text-align: left; vertical-align: top; padding: 6px 8px; border-bottom: 1px solid var(--line); }
th { color: var(--muted); font-weight: 600; }
.badge { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 12px; font-weight: 600;
  border: 1px solid currentColor; white-space: nowrap; }
.badge.safe { color: var(--safe); }
.badge.review { color: var(--review); }
.badge.manual, .badge.failed { color: var(--manual); }
.badge.suppressed, .badge.skipped, .badge.unchanged, .badge.changed, .badge.runtime { color: var(--muted-badge); }
.fix { margin-top: 4px; }
.change pre { padding: 4px 6px; border-radius: 4px; }
.change .before { background: var(--del-bg); }
.change .after { background: var(--add-bg); margin-top: 2px; }
ul.checks { list-style: none; padding-left: 0; margin: 6px 0; }
ul.checks li { padding: 3px 0; }
details.file { border: 1px solid var(--line); border-radius: 8px; margin: 12px 0; overflow: hidden; }
details.file > summary { cursor: pointer; padding: 10px 14px; background: var(--panel); list-style-position: inside; }
details.file > summary .path { font-weight: 600; }
details.file .body { padding: 8px 14px 14px; }
details.file > summary .count { color: var(--muted); }
.jump { display: block; margin-top: 6px; color: var(--muted); }
.stat-add { color: var(--add-fg); } .stat-del { color: var(--del-fg); }
table.diff { margin-top: 10px; border: 1px solid var(--line); }
table.diff td { border: 0; padding: 0 8px; }
/* Diff rows are the bulk of a large report: the cells carry no classes, the columns are styled by position. */
table.diff td:nth-child(-n+2) { width: 4.5em; text-align: right; color: var(--muted); user-select: none; }
table.diff td:last-child { white-space: pre-wrap; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
table.diff tr.add td { background: var(--add-bg); }
table.diff tr.add td:last-child { color: var(--add-fg); }
table.diff tr.remove td { background: var(--del-bg); }
table.diff tr.remove td:last-child { color: var(--del-fg); }
table.diff tr.hunk td { background: var(--hunk-bg); color: var(--muted); }
table.diff tr.note td { color: var(--muted); font-style: italic; }
.tok-kw { color: var(--kw); font-weight: 600; } .tok-str { color: var(--str); }
.tok-com { color: var(--com); font-style: italic; } .tok-mark { color: var(--mark); font-weight: 600; }
tr.add .tok-kw, tr.remove .tok-kw, tr.add .tok-str, tr.remove .tok-str { color: inherit; }
.filters { display: flex; flex-wrap: wrap; gap: 16px; align-items: center; margin: 8px 0; }
.filters input[type=search] { padding: 4px 8px; min-width: 260px; border: 1px solid var(--line); border-radius: 6px;
  background: var(--bg); color: var(--fg); }
body.hide-safe [data-safety=safe], body.hide-review [data-safety=review],
body.hide-manual [data-safety=manual], body.hide-suppressed [data-suppressed] { display: none; }
dl.rules dt { font-weight: 600; margin-top: 10px; }
dl.rules dd { margin: 2px 0 0 0; }
.empty { padding: 24px; border: 1px dashed var(--line); border-radius: 8px; text-align: center; color: var(--muted); }
footer { padding: 32px 24px; color: var(--muted); }
"""

SCRIPT = """
document.getElementById("filters").hidden = false;
document.querySelectorAll("[data-toggle]").forEach(function (box) {
  box.addEventListener("change", function () {
    document.body.classList.toggle("hide-" + box.dataset.toggle, !box.checked);
  });
});
// Files start folded; a link to a file or to one of its findings unfolds it.
function unfold() {
  var target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
  var folded = target && target.closest("details");
  if (folded) { folded.open = true; target.scrollIntoView(); }
}
window.addEventListener("hashchange", unfold);
unfold();
var query = document.getElementById("path-filter");
query.addEventListener("input", function () {
  var wanted = query.value.toLowerCase();
  document.querySelectorAll("details.file").forEach(function (file) {
    file.hidden = wanted !== "" && file.dataset.path.toLowerCase().indexOf(wanted) < 0;
  });
});
"""

CODE_SPAN = re.compile(r"(`+)(.+?)\1")

# Enough Python colouring to read a diff at a glance; a line is coloured on its own, so a string
# that spans lines is only coloured on its first line.
TOKENS = re.compile(
    rf"(?P<mark>{markers.PATTERN}$)"
    r"|(?P<com>#.*$)"
    r"|(?P<str>[rbfuRBFU]{0,2}(?:\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'))"
    r"|(?P<kw>\b(?:False|None|True|and|as|assert|async|await|break|class|continue|def|del|elif|else|except"
    r"|finally|for|from|global|if|import|in|is|lambda|nonlocal|not|or|pass|raise|return|try|while|with|yield)\b)"
)


def render(report: Report, rules: dict[str, dict[str, Any]]) -> str:
    nothing = not any(fr.findings or fr.diff or fr.error for fr in report.files)
    body = [
        header(report),
        "<main>",
        cards(report),
    ]
    if nothing:
        body.append('<p class="empty">Nothing to migrate.</p>')
    else:
        body += [
            not_processed(report),
            needs_a_human(report, rules),
            checklist(report),
            files(report, rules),
            rule_list(rules, {f.rule for f in report.findings}),
        ]
    body += ["</main>", footer(report)]
    script_hash = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    policy = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'"
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{policy}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>neuron-migrate {esc(report.command)} report</title>",
            f"<style>{STYLE}</style>",
            "</head>",
            "<body>",
            *[part for part in body if part],
            f"<script>{SCRIPT}</script>",
            "</body>",
            "</html>",
            "",
        ]
    )


def header(report: Report) -> str:
    t = report.totals()
    meta = (
        f"{esc(report.command)} · {esc(report.mode)} mode · {t['files']} {plural(t['files'], 'file')} "
        f"in {report.duration_seconds:.2f} s · neuron-migrate {esc(report.tool_version)}"
    )
    return f'<header>{REPORT_HEADING}<p class="meta">{meta}</p></header>'


def cards(report: Report) -> str:
    t = report.totals()
    items = [
        ("Files scanned", t["files"], ""),
        ("Changed", t["changed"], "good" if t["changed"] else ""),
        ("Edits", t["edits"], ""),
        ("To review", t["review"], "warn" if t["review"] else ""),
        ("Manual", t["manual"], "bad" if t["manual"] else ""),
        ("Failed", t["failed"], "bad" if t["failed"] else ""),
        ("Skipped", t["skipped"], ""),
        ("Suppressed", t["suppressed"], ""),
    ]
    html_cards = "".join(
        f'<div class="card {kind}"><div class="n">{n}</div><div class="label">{label}</div></div>'
        for label, n, kind in items
    )
    return f'<section class="cards" aria-label="Totals">{html_cards}</section>'


def not_processed(report: Report) -> str:
    bad = [fr for fr in report.files if fr.status == FAILED or (fr.status == SKIPPED and fr.error)]
    if not bad:
        return ""
    rows = "".join(
        f"<tr><td><code>{esc(fr.path)}</code></td><td>{badge(fr.status)}</td>"
        f"<td>{esc(fr.error or 'could not be processed')}</td></tr>"
        for fr in bad
    )
    return (
        '<section id="not-processed"><h2>Not processed</h2>'
        '<p class="muted">These files were left untouched.</p>'
        f'<table>{cols("file", "status", "")}<thead><tr><th>File</th><th>Status</th><th>Reason</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
        "</section>"
    )


def needs_a_human(report: Report, rules: dict[str, dict[str, Any]]) -> str:
    """The work left to a human, one folded section per file with a link to the file's diff."""
    manual = report.needs_a_human()
    if not manual:
        return ""
    anchors = file_anchors(report)
    groups: dict[str, list[Finding]] = {}
    for f in manual:
        groups.setdefault(f.path, []).append(f)
    blocks = []
    for path, items in groups.items():
        rows = "".join(
            f"<tr><td><code>{esc(where(f))}</code></td><td>{rule_ref(f.rule, rules)}</td>"
            f"<td>{prose(f.message)}{fix_line(f)}</td></tr>"
            for f in items
        )
        jump = ""
        if path in anchors:
            jump = f'<a class="jump" href="#{anchors[path]}">All edits and the diff of this file</a>'
        blocks.append(
            f'<details class="file" open data-path="{esc(path)}"><summary><span class="path"><code>{esc(path)}</code>'
            f'</span> <span class="count">{len(items)} {plural(len(items), "item")}</span></summary><div class="body">'
            f'<table>{cols("where", "rule", "")}<thead><tr><th>Where</th><th>Rule</th><th>What to do</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>{jump}</div></details>"
        )
    return f'<section id="manual"><h2>Needs a human ({len(manual)})</h2>{"".join(blocks)}</section>'


def where(f: Finding) -> str:
    """A position inside a file whose path is already the heading: ``line:col``, or ``cell N, line:col``."""
    return f"{f.span.line}:{f.span.column}" if f.cell is None else f"cell {f.cell}, {f.span.line}:{f.span.column}"


def cols(*names: str) -> str:
    """Column widths for a fixed-layout table (a blank name takes the rest), so long paths or code
    wrap inside their column instead of pushing the last one off the page."""
    return "<colgroup>" + "".join(f'<col class="{n}">' if n else "<col>" for n in names) + "</colgroup>"


def file_anchors(report: Report) -> dict[str, str]:
    """Id of each file's section in the Files list."""
    return {fr.path: f"file-{n}" for n, fr in enumerate(shown_files(report), start=1)}


def shown_files(report: Report) -> list[FileResult]:
    return [fr for fr in report.files if fr.findings or fr.diff]


def checklist(report: Report) -> str:
    groups = report.checklist()
    if not groups:
        return ""
    parts = ['<section id="checklist"><h2>Reviewer checklist</h2>']
    for tag, findings in groups.items():
        parts.append(f"<h3>{esc(tag)} <span class=\"muted\">({len(findings)})</span></h3>")
        if tag in RISK_GUIDANCE:
            parts.append(f'<p class="muted">{esc(RISK_GUIDANCE[tag])}</p>')
        # What the finding says and its fix are in its row, one click away: a finding with several risks is
        # listed under each, and repeating its text there made the checklist the largest part of a big report.
        items = "".join(
            f"<li><label><input type=\"checkbox\"> <a href=\"#{finding_id(f)}\"><code>{esc(location(f))}</code></a> "
            f"{rule_ref(f.rule, {})} {badge(f.safety)}</label></li>"
            for f in findings
        )
        parts.append(f'<ul class="checks">{items}</ul>')
    parts.append("</section>")
    return "".join(parts)


def files(report: Report, rules: dict[str, dict[str, Any]]) -> str:
    shown = shown_files(report)
    if not shown:
        return ""
    anchors = file_anchors(report)
    toggles = "".join(
        f'<label><input type="checkbox" data-toggle="{name}" checked> {label}</label>'
        for name, label in (
            (SAFE, "safe"),
            (REVIEW, "review"),
            (MANUAL, "manual"),
            ("suppressed", "suppressed"),
        )
    )
    filters = (
        f'<div class="filters" id="filters" hidden><span class="muted">Show:</span>{toggles}'
        '<input type="search" id="path-filter" placeholder="Filter files by path" aria-label="Filter files by path">'
        "</div>"
    )
    blocks = "".join(file_block(fr, rules, anchors[fr.path]) for fr in shown)
    return f'<section id="files"><h2>Files ({len(shown)})</h2>{filters}{blocks}</section>'


def file_block(fr: FileResult, rules: dict[str, dict[str, Any]], anchor: str) -> str:
    added, removed = diff_stats(fr.diff)
    counts = f'<span class="stat-add">+{added}</span> <span class="stat-del">−{removed}</span>' if fr.diff else ""
    summary = (
        f'<summary><span class="path"><code>{esc(fr.path)}</code></span> {badge(fr.status)} '
        f"{len(fr.edits)} {plural(len(fr.edits), 'edit')}, {len(fr.manual)} manual {counts}</summary>"
    )
    # Folded: a large run has hundreds of files; the summary line says what each holds.
    parts = [f'<details class="file" id="{anchor}" data-path="{esc(fr.path)}">{summary}<div class="body">']
    if fr.findings:
        rows = "".join(finding_row(f, rules) for f in sorted(fr.findings, key=position))
        parts.append(
            f'<table>{cols("where", "rule", "safety", "", "change")}<thead><tr><th>Where</th><th>Rule</th>'
            f"<th>Safety</th><th>What</th><th>Change</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    if fr.diff:
        parts.append(diff_table(fr.diff))
    parts.append("</div></details>")
    return "".join(parts)


def finding_row(f: Finding, rules: dict[str, dict[str, Any]]) -> str:
    attrs = f' id="{finding_id(f)}" data-safety="{esc(f.safety)}"' + (" data-suppressed" if f.suppressed else "")
    badges = badge(f.safety) + (" " + badge("suppressed") if f.suppressed else "")
    if f.evidence != "static":
        badges += " " + badge(f.evidence)
    return (
        f"<tr{attrs}><td><code>{esc(where(f))}</code></td><td>{rule_ref(f.rule, rules)}</td>"
        f"<td>{badges}</td><td>{prose(f.message)}{fix_line(f)}</td><td class=\"change\">{change(f)}</td></tr>"
    )


def finding_id(f: Finding) -> str:
    return f"f-{f.fingerprint}"


def change(f: Finding) -> str:
    if not f.applied:
        return f'<pre class="code">{esc(f.before)}</pre>' if f.before else ""
    after = f'<pre class="after">{esc(f.after)}</pre>' if f.after else '<div class="muted">(deleted)</div>'
    return f'<pre class="before">{esc(f.before)}</pre>{after}'


def fix_line(f: Finding) -> str:
    return f'<div class="fix"><strong>Fix:</strong> {prose(f.fix)}</div>' if f.fix else ""


def diff_table(diff: str) -> str:
    rows = []
    for line in diff_lines(diff):
        if line.kind == "header":
            continue
        if line.kind in ("hunk", "note"):
            rows.append(f'<tr class="{line.kind}"><td></td><td></td><td>{esc(line.text)}</td></tr>')
            continue
        old = "" if line.old is None else line.old
        new = "" if line.new is None else line.new
        sign, code = line.text[:1], line.text[1:]
        kind = "" if line.kind == "context" else f' class="{line.kind}"'
        rows.append(f"<tr{kind}><td>{old}</td><td>{new}</td><td>{esc(sign)}{highlight(code)}</td></tr>")
    return f'<table class="diff">{"".join(rows)}</table>'


def highlight(code: str) -> str:
    out, pos = [], 0
    for match in TOKENS.finditer(code):
        out.append(esc(code[pos : match.start()]))
        out.append(f'<span class="tok-{match.lastgroup}">{esc(match[0])}</span>')
        pos = match.end()
    out.append(esc(code[pos:]))
    return "".join(out)


def rule_list(rules: dict[str, dict[str, Any]], used: set[str]) -> str:
    if not used:
        return ""
    entries = []
    for rule_id in sorted(used):
        rule = rules.get(rule_id, {})
        risks = ", ".join(rule.get("risks", [])) or "none"
        links = " ".join(
            f'<a href="{esc(url)}" rel="noreferrer">{esc(url)}</a>' for url in rule.get("docs", []) if is_web(url)
        )
        entries.append(
            f'<dt id="rule-{esc(rule_id)}">{esc(rule_id)} {esc(rule.get("title", ""))} '
            f"{badge(rule.get('safety', ''))}</dt>"
            f"<dd>{esc(rule.get('summary', ''))}</dd>"
            f'<dd class="muted">Risks: {esc(risks)}{" · " + links if links else ""}</dd>'
        )
    return f'<section id="rules"><h2>Rules</h2><dl class="rules">{"".join(entries)}</dl></section>'


def rule_ref(rule_id: str, rules: dict[str, dict[str, Any]]) -> str:
    # The rule's title and text are in the Rules section, once: repeating them on every finding bloats the page.
    return f'<a href="#rule-{esc(rule_id)}">{esc(rule_id)}</a>'


def footer(report: Report) -> str:
    return (
        f"<footer>neuron-migrate {esc(report.tool_version)} · report schema {SCHEMA_VERSION} · "
        f"exit code {report.exit_code()}</footer>"
    )


def prose(value: str) -> str:
    """A rule message: text escaped, `backticked` code shown as code."""
    out, pos = [], 0
    for match in CODE_SPAN.finditer(value):
        out.append(esc(value[pos : match.start()]))
        out.append(f"<code>{esc(match[2])}</code>")
        pos = match.end()
    out.append(esc(value[pos:]))
    return "".join(out)


def badge(word: str) -> str:
    return f'<span class="badge {esc(word)}">{esc(word)}</span>' if word else ""


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


REPORT_HEADING = "<h1>neuron-migrate report</h1>"  # the page render() makes, for rewrite and audit alike


def embed(page: str, section_id: str, section: str) -> str | None:
    """``page``, a report of ``render()``, with ``section`` (``<section id="{section_id}">...</section>``) as its
    last section, replacing an earlier one of that id; None when ``page`` is not such a report."""
    if REPORT_HEADING not in page or "</main>" not in page:
        return None
    page = re.sub(rf'<section id="{re.escape(section_id)}">.*?</section>\n?', "", page, flags=re.S)
    head, _, tail = page.rpartition("</main>")
    return f"{head}{section}\n</main>{tail}"

