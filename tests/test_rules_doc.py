"""docs/rules.md is generated from the rule metadata and must match it."""

from __future__ import annotations

import re

from conftest import ROOT
from neuron_migrate.rules import catalog
from neuron_migrate.rules.base import all_rules

RULES_DOC = ROOT / "docs" / "rules.md"


def test_rules_doc_is_up_to_date():
    expected = catalog.markdown()
    current = RULES_DOC.read_text(encoding="utf-8") if RULES_DOC.exists() else ""
    assert current == expected, f"docs/rules.md is stale; regenerate it with: {catalog.REGENERATE}"


def test_every_rule_has_a_section_with_its_example():
    text = catalog.markdown()
    for rule in all_rules():
        meta = rule.meta
        assert f"### {meta.id} {meta.title}" in text
        assert meta.example.before in text
        assert meta.example.after in text


def test_code_fences_are_balanced():
    fences = [line for line in catalog.markdown().splitlines() if re.match(r"^`{3,}", line)]
    assert len(fences) % 2 == 0


def test_fence_outlasts_backticks_in_the_code():
    block = catalog._fence("s = '```'\n", "python")
    assert block.startswith("````python\n") and block.endswith("\n````")


def test_table_links_point_at_headings():
    text = catalog.markdown()
    for rule in all_rules():
        anchor = catalog._anchor(rule.meta.id, rule.meta.title)
        assert f"(#{anchor})" in text
        assert re.fullmatch(r"[a-z0-9_-]+", anchor)
