"""The fixture cases of every file kind, and every rule's documented example.

Layout (see ``fixture_harness``): ``fixtures/<kind>/<ID>/<case>.before.<ext>`` with
``<case>.after.<ext>`` and ``<case>.findings``; ``<case>.noop.<ext>`` with ``<case>.noop.findings``.
Kinds: ``rules`` (Python, ``.py``), ``shell`` (``.sh``), ``notebook`` (``.ipynb``; its cases may also sit
straight under ``fixtures/notebook/``, naming no rule), ``requirements`` (``.txt`` requirements file,
``.toml`` pyproject.toml, ``.cfg`` setup.cfg, ``.yml`` environment.yml) and ``dockerfile``. Each file
goes through its kind's adapter, bytes in and bytes out, as ``rewrite`` writes it.

Every rule on (the expected output):
- a before case comes out as its ``.after.`` file byte for byte, a no-op case byte-identical;
- the output is valid for its kind (Python parses; a notebook is JSON whose code cells parse, but the ones
  NM550 names, and nothing but cell sources changed; a shell script that passed ``bash -n`` still does;
  pyproject.toml, setup.cfg and environment.yml still load);
- a second run changes nothing and applies nothing (fixpoint);
- the rule the folder names fires (and not only on a suppressed line) on a before case; on a no-op case no
  rule applies an edit;
- the findings are the ones in the ``.findings`` snapshot (``python tests/update_snapshots.py`` writes it);
- where markers own whole lines (shell, Dockerfile, requirement files), ``--no-comments`` gives the expected
  output without its marker lines.

The rule alone (``RulePlan.build(select=[ID])``), on every case of a folder that names a rule:
- the file does not fail, the output is valid for its kind, and a second run with the rule alone changes nothing;
- the rule fires on a before case and applies nothing on a no-op case. A rule that acts only on what other
  rules did (``FOLLOWS``) must fire once the rules it follows run with it, and must stay silent alone, so that
  the table cannot go stale;
- the rule's own findings are its lines in the snapshot, exactly: the alone output itself is not snapshotted,
  but what the rule says about a file does not depend on which other rules run. Where it does (another rule's
  edit of the same call changes what this rule sees), the case is in ``ALONE_SAYS_OTHERWISE`` with the
  reason, and there every place the rule reports alone must still be a place it reports with every rule on.
  When the tables were written, of the 337 cases of a rule folder the findings of 327 matched exactly; the 10
  others were the 7 cases of ``FOLLOWS`` rules and the 3 of ``ALONE_SAYS_OTHERWISE``.
"""

from __future__ import annotations

import re

import pytest

from conftest import FIXTURES
from fixture_harness import (
    BEFORE,
    NOOP,
    all_cases,
    cases,
    findings_files,
    findings_text,
    output_of,
    rewrite,
    rule_lines,
)
from neuron_migrate.report.model import CHANGED, FAILED, UNCHANGED
from neuron_migrate.rules.base import all_rules
from neuron_migrate.rules.catalog import EXAMPLE_FILES

RULES_DIR = FIXTURES / "rules"
PAIRS = cases(BEFORE)
NOOPS = cases(NOOP)
OF_A_RULE = [case for case in all_cases() if case.rule]

_LOADERS = ("NM301", "NM302", "NM303", "NM304", "NM320")
_PINS = ("NM530", "NM531", "NM532", "NM533", "NM534", "NM535", "NM536")
# Rules that act only on what other rules did, and the rules whose edits they act on.
FOLLOWS = {
    "NM305": _LOADERS,  # a save of a model an optimum-neuron loader rule migrated
    "NM307": _LOADERS,  # `neuron_config` of such a model
    "NM308": _LOADERS,  # inputs to such a model
    "NM513": ("NM512",),  # where NM512 removed the Neuron-only Trainer flags
    "NM537": _PINS,  # the index marker goes only on a file whose pins were migrated
    "NM538": _PINS,  # hashes of a requirement another rule changed
}
# Cases where the rule alone says something else than with every rule on, and why.
ALONE_SAYS_OTHERWISE = {
    # NM102 reports the device strings of the calls another rule rewrites (`torch.device("xla", 1)`) only once
    # that rule has rewritten them.
    "rules/NM102/device_specs.before": "fewer findings alone",
    # An argument holding a legacy call (`xm.get_ordinal()`) is migrated by another rule; alone, it stays legacy
    # and the call is a manual site.
    "rules/NM122/legacy_argument.before": "manual alone where the argument is migrated by another rule",
    "rules/NM125/all_reduce.before": "manual alone where the argument is migrated by another rule",
    # Whether a try guard's legacy import is still read depends on the rules that migrate the code under it:
    # alone, that code stays legacy, so the guard keeps its import (and says so) instead of the probe.
    **{
        f"rules/NM190/{case}.before": "the guard keeps its legacy import alone"
        for case in (
            "device_resolver",
            "fallback_in_expression",
            "block_in_shim",
            "flag_guarded",
            "handed_torch_in_a_guard",
            "try_import",
            "try_import_used_unguarded",
            "two_probes",
            "neuron_named_load",
            "stub_class_fallback",
        )
    },
}
MARKER_LINE = re.compile(r"\s*# (TODO\(neuron-migrate NM|neuron-migrate\(NM)")


def _id(case):
    return case.id


def _fired(findings, rule: str) -> bool:
    return any(f.rule == rule and not f.suppressed for f in findings)


def _assert_fixpoint(case, outcome, output: bytes, plan) -> None:
    if outcome.status == UNCHANGED and not [f for f in outcome.findings if f.applied]:
        return  # the second run would be the first one again (same bytes in, same plan)
    again = rewrite(case, output, plan)
    assert again.status == UNCHANGED, f"second run changed the output (no fixpoint)\n{again.diff}"
    assert not [f for f in again.findings if f.applied], "second run applied an edit again"


def _assert_snapshot(case, findings) -> None:
    snapshot = case.findings_file
    assert snapshot.exists(), f"missing {snapshot.name}: run `python tests/update_snapshots.py`"
    assert findings_text(findings) == snapshot.read_text(encoding="utf-8"), (
        f"findings differ from {snapshot.name}: run `python tests/update_snapshots.py` and read the diff"
    )


# ----- every rule on -------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", PAIRS, ids=_id)
def test_fixture_rewrites_to_expected(case):
    assert case.expected.exists(), f"missing expected output {case.expected.name}"
    data = case.source.read_bytes()
    outcome = rewrite(case, data, case.plan())
    assert outcome.status != FAILED, outcome.error
    output = output_of(outcome, data)
    assert output == case.expected.read_bytes()
    case.kind.check_parses(case.source, output, data, outcome.findings)
    if case.rule:
        assert _fired(outcome.findings, case.rule), f"{case.rule} never fired on its own fixture"
    _assert_fixpoint(case, outcome, output, case.plan())
    _assert_snapshot(case, outcome.findings)


@pytest.mark.parametrize("case", NOOPS, ids=_id)
def test_noop_fixture_is_untouched(case):
    outcome = rewrite(case, case.source.read_bytes(), case.plan())
    assert outcome.status == UNCHANGED, outcome.diff or outcome.error
    assert not [f for f in outcome.findings if f.applied]
    _assert_snapshot(case, outcome.findings)


@pytest.mark.parametrize("case", [c for c in PAIRS if c.kind.whole_line_markers], ids=_id)
def test_no_comments_output_is_the_expected_one_without_its_markers(case):
    data = case.source.read_bytes()
    outcome = rewrite(case, data, case.plan(), no_comments=True)
    expected = case.expected.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = [line for line in expected if not MARKER_LINE.match(line)]
    assert output_of(outcome, data).decode("utf-8").splitlines(keepends=True) == kept


def test_every_findings_snapshot_belongs_to_a_case():
    wanted = {case.findings_file for case in all_cases()}
    orphans = [path.relative_to(FIXTURES) for path in findings_files() if path not in wanted]
    assert not orphans, f"findings of no fixture (run `python tests/update_snapshots.py`): {orphans}"


# ----- the rule alone ------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", OF_A_RULE, ids=_id)
def test_the_rule_alone(case):
    data = case.source.read_bytes()
    alone = case.plan(case.rule)
    outcome = rewrite(case, data, alone)
    assert outcome.status in (CHANGED, UNCHANGED), outcome.error
    output = output_of(outcome, data)
    case.kind.check_parses(case.source, output, data, outcome.findings)
    _assert_fixpoint(case, outcome, output, alone)
    if case.role == NOOP:
        assert not [f for f in outcome.findings if f.rule == case.rule and f.applied]
    elif case.rule in FOLLOWS:
        assert not _fired(outcome.findings, case.rule), f"{case.rule} fires alone: drop it from FOLLOWS"
        together = case.plan(case.rule, *FOLLOWS[case.rule])
        assert _fired(rewrite(case, data, together).findings, case.rule), f"{case.rule} never fired"
    else:
        assert _fired(outcome.findings, case.rule), f"{case.rule} never fired on its own fixture alone"
    _assert_the_rule_says_the_same(case, outcome.findings)


def _assert_the_rule_says_the_same(case, findings) -> None:
    if case.keeps_dual_stack and case.rule == "NM190":
        # With --keep-dual-stack the neuron copy of a branch is what the other rules make of it: alone, the copy
        # is the legacy code again and NM190 pairs branches it would leave alone with every rule on.
        return
    expected = rule_lines(case.findings_file.read_text(encoding="utf-8"), case.rule)
    alone = rule_lines(findings_text(findings), case.rule)
    if case.role == BEFORE and (case.rule in FOLLOWS or case.id in ALONE_SAYS_OTHERWISE):
        assert alone != expected, f"{case.id}: the rule alone says the same now: drop it from the table"
        assert {_where(line) for line in alone} <= {_where(line) for line in expected}
    else:
        assert alone == expected, "the rule alone reports otherwise than with every rule on"


def _where(line: str) -> str:
    """The ``line:col`` (``cell N:line:col``) of a snapshot line."""
    _, rest = line.split(" ", 1)
    return rest.split(" ", 2)[1] if rest.startswith("cell ") else rest.split(" ", 1)[0]


# ----- every rule -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.meta.id)
def test_rule_example_is_what_the_engine_does(rule, migrate, plan):
    example = rule.meta.example
    assert example is not None, f"{rule.meta.id} has no before/after example"
    if rule.meta.kind != "python":
        if rule.source == "cuda":
            from neuron_migrate.migrate.engine import RulePlan

            plan = RulePlan.build(from_cuda=True)
        assert _adapt(rule.meta.kind, example.before, plan) == example.after
        assert _adapt(rule.meta.kind, example.after, plan) == example.after
        return
    import ast

    if rule.source == "cuda":
        migrate = _migrate_from_cuda
    result = migrate(example.before)
    assert result.code == example.after
    ast.parse(result.code)
    assert migrate(result.code).code == result.code


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.meta.id)
def test_every_rule_has_fixtures(rule):
    python = rule.meta.kind == "python"
    folder = RULES_DIR / rule.meta.id if python else FIXTURES / rule.meta.kind / rule.meta.id
    ext = "py" if python else "*"
    assert list(folder.glob(f"*.before.{ext}")), f"{rule.meta.id}: no before/after fixture"
    if rule.meta.safety != "manual":
        assert list(folder.glob(f"*.noop.{ext}")), f"{rule.meta.id}: no no-op fixture"


def _migrate_from_cuda(source: str):
    """``source`` rewritten with every rule and --from cuda."""
    from neuron_migrate.migrate.engine import RulePlan, migrate_python

    return migrate_python(source, "example.py", RulePlan.build(from_cuda=True))


def _adapt(kind: str, text: str, plan) -> str:
    """``text`` rewritten as a file of ``kind`` by that kind's adapter, every rule on."""
    from neuron_migrate.migrate.sources import ADAPTERS

    outcome = ADAPTERS[kind](text.encode("utf-8"), EXAMPLE_FILES[kind], plan, False)
    assert outcome.status in (CHANGED, UNCHANGED), outcome.error
    return text if outcome.output is None else outcome.output.decode("utf-8")
