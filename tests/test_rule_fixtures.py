"""The before/after fixtures of every rule, and every rule's documented example.

Layout: ``fixtures/rules/<ID>/<case>.before.py`` with ``<case>.after.py`` (the full engine's
output, every rule on), and ``<case>.noop.py`` for code that must come out byte-identical with no
edit. Each rewrite must parse and must be a fixpoint.

Rules of another file kind (``RuleMeta.kind``) run their example through that kind's adapter, and
keep their fixtures under ``fixtures/<kind>/<ID>/`` (``<case>.before.<ext>``, ``.after.<ext>``,
``.noop.<ext>``), which their own test module runs.
"""

from __future__ import annotations

import ast

import pytest

from conftest import FIXTURES
from neuron_migrate.rules.base import all_rules
from neuron_migrate.rules.catalog import EXAMPLE_FILES

RULES_DIR = FIXTURES / "rules"
PAIRS = sorted(RULES_DIR.glob("*/*.before.py"))
NOOPS = sorted(RULES_DIR.glob("*/*.noop.py"))




def _id(path):
    return f"{path.parent.name}/{path.name.split('.')[0]}"


@pytest.mark.parametrize("before", PAIRS, ids=_id)
def test_fixture_rewrites_to_expected(before, migrate):
    after = before.with_name(before.name.replace(".before.py", ".after.py"))
    assert after.exists(), f"missing expected output {after.name}"
    source = before.read_text(encoding="utf-8")
    result = migrate(source, path=before.name)
    assert result.code == after.read_text(encoding="utf-8")
    ast.parse(result.code)
    rule_id = before.parent.name
    assert any(f.rule == rule_id for f in result.findings), f"{rule_id} never fired on its own fixture"
    again = migrate(result.code, path=before.name)
    assert again.code == result.code, "second run changed the output (no fixpoint)"


@pytest.mark.parametrize("noop", NOOPS, ids=_id)
def test_noop_fixture_is_untouched(noop, migrate):
    source = noop.read_text(encoding="utf-8")
    result = migrate(source, path=noop.name)
    assert result.code == source
    rule_id = noop.parent.name
    assert not [f for f in result.findings if f.rule == rule_id and f.applied]


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.meta.id)
def test_rule_example_is_what_the_engine_does(rule, migrate, plan):
    example = rule.meta.example
    assert example is not None, f"{rule.meta.id} has no before/after example"
    if rule.meta.kind != "python":
        assert _adapt(rule.meta.kind, example.before, plan) == example.after
        assert _adapt(rule.meta.kind, example.after, plan) == example.after
        return
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


def _adapt(kind: str, text: str, plan) -> str:
    """``text`` rewritten as a file of ``kind`` by that kind's adapter, every rule on."""
    from neuron_migrate.migrate.sources import ADAPTERS
    from neuron_migrate.report.model import CHANGED, UNCHANGED

    outcome = ADAPTERS[kind](text.encode("utf-8"), EXAMPLE_FILES[kind], plan, False)
    assert outcome.status in (CHANGED, UNCHANGED), outcome.error
    return text if outcome.output is None else outcome.output.decode("utf-8")
