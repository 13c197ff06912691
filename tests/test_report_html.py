"""The HTML page: self-contained, escaped, and showing the same facts as the other formats."""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest
from test_report_render import CATALOG, EVIL_PATH, empty_report, sample_report

from neuron_migrate.report import html as html_report
from neuron_migrate.report.render import render


class Page(HTMLParser):
    """Collects what the assertions need: tags with attributes, script bodies, visible text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in_script = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)
        else:
            self.text.append(data)

    def find(self, tag: str, **attrs: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in attrs.items())]


def page(report=None) -> str:
    return render(report or sample_report(), "html", rules=CATALOG)


def between(text: str, start: str, end: str) -> str:
    return text[text.index(start) : text.index(end, text.index(start))]


def test_self_contained():
    text = page()
    parsed = Page(text)
    assert text.startswith("<!DOCTYPE html>")
    assert not parsed.find("link") and not parsed.find("img") and not parsed.find("iframe")
    assert all("src" not in attrs for _, attrs in parsed.tags)
    # The only links are rule documentation links, and only web ones.
    hrefs = [a["href"] for a in parsed.find("a")]
    external = [h for h in hrefs if not h.startswith("#")]
    assert external == [
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/about-pytorch-neuron.html",
        "https://docs.pytorch.org/docs/stable/distributed.html",
    ]
    assert "javascript:" not in text


def test_only_the_page_script_runs():
    text = page()
    parsed = Page(text)
    assert len(parsed.find("script")) == 1
    (script,) = parsed.scripts
    assert script == html_report.SCRIPT
    (policy,) = [m["content"] for m in parsed.find("meta") if m.get("http-equiv") == "Content-Security-Policy"]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy
    assert "default-src 'none'" in policy


def test_hostile_paths_code_and_messages_are_escaped():
    text = page()
    parsed = Page(text)
    visible = "".join(parsed.text)
    # Shown as text, never parsed as markup.
    assert EVIL_PATH in visible
    assert "removed <script>alert('m')</script>" in visible
    assert 's = "</script><script>alert(1)</script>"' in visible
    assert "x = 1 < 2 & 3 > 0" in visible
    assert "<script>alert" not in text
    (evil,) = parsed.find("details", **{"data-path": EVIL_PATH})
    assert evil is not None


def test_summary_cards_show_the_totals():
    cards = between(page(), '<section class="cards"', "</section>")
    found = dict((label, int(n)) for n, label in re.findall(r'<div class="n">(\d+)</div><div class="label">([^<]+)</div>', cards))
    assert found == {
        "Files scanned": 6, "Changed": 2, "Edits": 3, "To review": 1, "Manual": 2, "Failed": 1, "Skipped": 1, "Suppressed": 1,
    }


def test_not_processed_files():
    section = between(page(), '<section id="not-processed">', "</section>")
    assert "<code>broken.py</code>" in section and "3:9: invalid syntax" in section and "broken.py:3:9" not in section
    assert "<code>vendor/lib.py</code>" in section and "excluded by the configuration" in section


def test_needs_a_human_is_grouped_by_file():
    text = page()
    section = text[text.index('<section id="manual">') : text.index('<section id="checklist">')]
    assert "Needs a human (2)" in section
    group = r'<details class="file" open data-path="([^"]+)"><summary>.*?<span class="count">(.*?)</span>'
    groups = re.findall(group, section)
    assert groups == [("train.py", "1 item"), ("notebooks/explore.ipynb", "1 item")]
    rows = re.findall(r"<tr><td><code>(.*?)</code></td>", section)
    assert rows == ["7:12", "cell 3, 2:1"]
    # Each group links to the file's section, where its diff is.
    train_id = re.search(r'<details class="file" id="(file-\d+)" data-path="train.py">', text)[1]
    assert f'<a class="jump" href="#{train_id}">' in section
    assert "<strong>Fix:</strong> Use <code>torch.neuron.get_device_name()</code> if a x &lt; y check needs it." in section
    assert '<a href="#rule-NM100">NM100</a>' in section  # the rule's title and text are in the Rules section


def test_reviewer_checklist():
    section = between(page(), '<section id="checklist">', "</section>")
    assert re.findall(r"<h3>([a-z-]+) ", section) == ["numerics", "collectives", "performance"]
    assert section.count('<input type="checkbox">') == 3
    assert "Run with two or more workers" in section
    assert "NM110" not in section


def test_file_sections_with_findings_and_diff():
    text = page()
    train = between(text, '<details class="file" id="file-1" data-path="train.py">', "</details>")
    assert '<span class="badge changed">changed</span> 2 edits, 1 manual' in train
    # Findings sorted by position, each tagged for the filters.
    assert re.findall(r'<tr id="f-[0-9a-f]{16}" data-safety="(\w+)"', train) == ["review", "safe", "manual", "safe"]
    assert train.count("data-suppressed") == 1
    assert '<pre class="before">xm.all_reduce(xm.REDUCE_SUM, [loss])</pre>' in train
    assert '<pre class="after">dist.all_reduce(loss, op=dist.ReduceOp.SUM)</pre>' in train
    assert '<div class="muted">(deleted)</div>' in train
    # Diff rows carry old/new line numbers and add/remove classes; file headers are dropped.
    assert '<tr class="remove"><td>5</td><td></td>' in train
    assert '<tr class="add"><td></td><td>6</td>' in train
    assert '<tr><td>7</td><td>8</td>' in train  # a context line
    assert "+++ b/train.py" not in train
    assert (
        '+    <span class="tok-mark"># neuron-migrate(NM130): check the reduced value is what the old code expected</span>'
        in train
    )
    files = text[text.index('<section id="files">') :]
    notebook = between(files, 'data-path="notebooks/explore.ipynb"', "</details>")
    assert "<code>cell 3, 2:1</code>" in notebook
    assert 'class="diff"' not in notebook
    assert 'data-path="clean.py"' not in text


def test_rules_section_describes_the_rules_used():
    section = between(page(), '<section id="rules">', "</section>")
    assert re.findall(r'<dt id="rule-(NM\d+)">', section) == ["NM100", "NM110", "NM130"]
    assert "Risks: numerics, collectives" in section


def test_runtime_evidence_is_marked():
    report = sample_report()
    report.files[0].findings[2].evidence = "runtime"
    assert '<span class="badge runtime">runtime</span>' in page(report)


def test_empty_report():
    text = render(empty_report(), "html")
    assert '<p class="empty">Nothing to migrate.</p>' in text
    assert 'id="files"' not in text and 'id="manual"' not in text
    assert Page(text).scripts == [html_report.SCRIPT]


def test_highlight():
    assert html_report.highlight('if x: return "a<b"  # done') == (
        '<span class="tok-kw">if</span> x: <span class="tok-kw">return</span> '
        '<span class="tok-str">&quot;a&lt;b&quot;</span>  <span class="tok-com"># done</span>'
    )
    assert html_report.highlight("# TODO(neuron-migrate NM100): do it") == (
        '<span class="tok-mark"># TODO(neuron-migrate NM100): do it</span>'
    )
    assert html_report.highlight("format_in = 1") == "format_in = 1"


@pytest.mark.slow
def test_page_script_runs_under_its_own_policy(tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("no Chromium on PATH")
    target = tmp_path / "report.html"
    target.write_text(page(), encoding="utf-8")
    dom = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", target.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout
    # The filter bar starts hidden and only the page's script shows it: the CSP hash let it run.
    assert re.search(r'<div class="filters" id="filters">', dom), dom[:2000]
    assert "<script>alert" not in dom


def wide_report():
    """Paths and code lines far longer than a window is wide, as in real monorepos."""
    report = sample_report()
    deep = "/".join(f"very_long_package_name_{n}" for n in range(8)) + "/train_with_a_very_long_module_name.py"
    for fr in report.files:
        fr.path = f"{deep[:-3]}_{fr.path.replace('/', '_')}"
        for f in fr.findings:
            f.path = fr.path
            f.before = f.before + " + " + "x" * 300 if f.before else f.before
    report.files[0].diff = report.files[0].diff.replace("kind = xm.xla_device_kind()", "kind = " + "y" * 400)
    return report


MEASURE = (
    "<script>document.body.setAttribute('data-measured', "
    "document.documentElement.scrollWidth + 'x' + document.documentElement.clientWidth);</script>"
)


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 800])
def test_the_page_never_scrolls_sideways(tmp_path, width):
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("no Chromium on PATH")
    text = page(wide_report())
    # The page's policy only lets its own script run: the measuring copy drops it and adds a script
    # that writes the page's scroll width next to the window's width into the DOM.
    measured = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text).replace("</body>", MEASURE + "</body>")
    target = tmp_path / "wide.html"
    target.write_text(measured, encoding="utf-8")
    flags = [
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={width},1000",
    ]
    dom = subprocess.run([browser, *flags, "--dump-dom", target.as_uri()],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    match = re.search(r'data-measured="(\d+)x(\d+)"', dom)
    assert match, dom[:2000]
    scroll, client = int(match[1]), int(match[2])
    assert 0 < client <= width
    assert scroll <= client, f"the page is {scroll} px wide in a {client} px window"
    # The screenshot a reviewer would see, kept next to the test's files when it fails.
    subprocess.run([browser, *flags, f"--screenshot={tmp_path / 'wide.png'}", target.as_uri()],
                   capture_output=True, timeout=120, check=True)
    assert (tmp_path / "wide.png").stat().st_size > 0


LEGACY_MODULE = '''import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl


def train_{n}(model, loader, optimizer):
    device = xm.xla_device()
    model = model.to(device)
    for batch in pl.MpDeviceLoader(loader, device):
        loss = model(batch).sum()
        loss.backward()
        xm.optimizer_step(optimizer)
        xm.mark_step()
        xm.master_print(loss.item())
    xm.save(model.state_dict(), "model_{n}.pt")
    return xm.get_ordinal(), xm.xrt_world_size()
'''


@pytest.fixture(scope="module")
def generated_report(tmp_path_factory):
    """A rewrite report of a generated tree of legacy training modules, with the diffs the page shows."""
    from neuron_migrate.config import load_config
    from neuron_migrate.migrate.runner import run

    root = tmp_path_factory.mktemp("tree")
    for n in range(12):
        (root / f"pkg{n % 3}").mkdir(exist_ok=True)
        (root / f"pkg{n % 3}" / f"train_{n}.py").write_text(LEGACY_MODULE.format(n=n), encoding="utf-8")
    return run([root], load_config([root], jobs=1, cache=False), mode="check", diffs=True)


def test_a_large_report_stays_small_per_finding(generated_report):
    from neuron_migrate.rules import catalog

    rules = catalog.catalog()
    text = render(generated_report, "html", rules=rules)
    findings = len(generated_report.findings)
    assert findings >= 12 * 8
    # Everything that belongs to a rule (title, summary, docs) is written once, in the Rules section.
    for rule_id in {f.rule for f in generated_report.findings}:
        assert text.count(html_report.esc(rules[rule_id]["summary"])) == 1, rule_id
    assert ' title="' not in text
    # The fixed part (style, script, headings) aside, a finding with its share of the diff takes a bounded size.
    fixed = len(render(empty_report(), "html"))
    assert (len(text) - fixed) / findings < 1300, (len(text) - fixed) / findings  # 1450 when rule titles, fixes and diff cell classes were repeated


def test_files_start_folded_and_a_link_unfolds_them(generated_report):
    text = render(generated_report, "html", rules=CATALOG)
    files = between(text, '<section id="files">', "</section>")
    assert files.count('<details class="file"') == 12 and " open " not in files
    assert 'addEventListener("hashchange", unfold)' in html_report.SCRIPT
    # the checklist points at each finding's row, which holds its text and fix
    target = re.search(r'<ul class="checks"><li><label><input type="checkbox"> <a href="#(f-[0-9a-f]{16})">', text)[1]
    assert f'<tr id="{target}" ' in files
