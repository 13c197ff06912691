"""Rows (rules/rows.py): the names a table answers, applied at call sites and bare references the way
hand-written handlers were, with the dispatch tables derived from them."""

from __future__ import annotations

import ast

import pytest

from neuron_migrate.migrate.engine import RulePlan, migrate_python
from neuron_migrate.rules.base import MANUAL, SAFE, Example, Rule, RuleIndex, RuleMeta, all_rules
from neuron_migrate.rules.rows import Manual, Remove, Rename, Row, row_for

TABLE = (
    Row("legacy_pkg.helpers.old_add", "NM998", Rename("stock_pkg.math.add")),
    Row("legacy_pkg.helpers.Timer", "NM998", Rename("stock_pkg.timing.Timer", from_import=True)),
    Row("legacy_pkg.helpers.device_count", "NM998", Rename("stock_pkg.device.count", module="stock_pkg")),
    Row("legacy_pkg.helpers.enable_lazy", "NM998", Remove(note="lazy mode switch removed", fallback="drop it")),
    Row("legacy_pkg.helpers.patch", "NM998", Remove(referenced="nothing to patch: delete this use")),
    Row("legacy_pkg.helpers.Mesh", "NM998", Manual("build a DeviceMesh")),
    Row("legacy_pkg.helpers.autocast", "NM998", Rename("stock_pkg.amp.autocast", review="check the dtype")),
    Row("legacy_pkg.other.thing", "NM997", Manual("not this rule's row")),
)


class TableRule(Rule):
    """A stand-in rule answering only from rows, plus one hand-written handler."""

    meta = RuleMeta("NM998", "test table", safety=SAFE, triggers=(b"legacy_pkg",), example=Example("", ""))
    rows = TABLE
    calls = {"legacy_pkg.helpers.by_hand": "by_hand"}

    def by_hand(self, original, updated, qname):
        return self.ctx.expr("print()")


@pytest.fixture(scope="module")
def run():
    plan = RulePlan(index=RuleIndex.build([TableRule]), legacy_prefixes=("legacy_pkg.helpers",))

    def rewrite(source: str):
        result = migrate_python(source, "t.py", plan)
        ast.parse(result.code)
        assert migrate_python(result.code, "t.py", plan).code == result.code
        return result

    return rewrite


def test_a_rule_keeps_its_own_rows_and_derives_its_tables():
    assert {row.rule for row in TableRule.rows} == {"NM998"}
    assert "legacy_pkg.other.thing" not in TableRule.calls
    assert TableRule.calls["legacy_pkg.helpers.by_hand"] == "by_hand"
    assert TableRule.calls["legacy_pkg.helpers.Mesh"] == TableRule.references["legacy_pkg.helpers.Mesh"] == "apply_row"
    # a removal answers calls only, unless it says what to do with a bare reference
    assert "legacy_pkg.helpers.enable_lazy" not in TableRule.references
    assert "legacy_pkg.helpers.patch" in TableRule.references


def test_rename_keeps_the_arguments_and_imports_the_target_module(run):
    code = run("from legacy_pkg.helpers import old_add\n\ntotal = old_add(1, b=2)\nf = old_add\n").code
    assert code == "import stock_pkg.math\n\ntotal = stock_pkg.math.add(1, b=2)\nf = stock_pkg.math.add\n"


def test_rename_by_from_import_and_through_a_chosen_module(run):
    source = "import legacy_pkg.helpers as h\n\nt = h.Timer()\nn = h.device_count()\n"
    code = run(source).code
    assert "from stock_pkg.timing import Timer\n" in code and "t = Timer()\n" in code
    assert "import stock_pkg\n" in code and "n = stock_pkg.device.count()\n" in code


def test_rename_with_review_leaves_a_review_marker(run):
    code = run("import legacy_pkg.helpers as h\n\nctx = h.autocast(x)\n").code
    assert "# neuron-migrate(NM998): check the dtype\nctx = stock_pkg.amp.autocast(x)\n" in code


def test_remove_deletes_the_line_with_its_note(run):
    result = run("import legacy_pkg.helpers as h\n\nh.enable_lazy()\nmodel = build()\n")
    assert result.code == "model = build()\n"
    [finding] = [f for f in result.findings if f.rule == "NM998"]
    assert finding.applied and finding.message == "lazy mode switch removed"


def test_remove_inside_an_expression_says_the_fallback(run):
    result = run("import legacy_pkg.helpers as h\n\nok = h.enable_lazy() or retry()\n")
    [finding] = [f for f in result.findings if f.rule == "NM998"]
    assert not finding.applied and finding.message.endswith("; drop it")


def test_remove_gives_a_bare_reference_its_next_step(run):
    code = run("import legacy_pkg.helpers as h\n\nhooks = [h.patch]\n").code
    assert "# TODO(neuron-migrate NM998): nothing to patch: delete this use\nhooks = [h.patch]\n" in code


def test_manual_marks_calls_and_references_alike(run):
    result = run("import legacy_pkg.helpers as h\n\nmesh = h.Mesh(4)\nkind = h.Mesh\n")
    assert result.code.count("# TODO(neuron-migrate NM998): build a DeviceMesh\n") == 2
    assert [f.message for f in result.findings if f.rule == "NM998"] == ["build a DeviceMesh"] * 2


def test_hand_written_handlers_still_answer_their_names(run):
    assert "x = print()\n" in run("import legacy_pkg.helpers as h\n\nx = h.by_hand()\n").code


def test_an_exact_row_wins_over_a_prefix_row():
    rows = {
        "pkg.mod.*": Row("pkg.mod.*", "NM998", Manual("anything under mod")),
        "pkg.mod.sub.*": Row("pkg.mod.sub.*", "NM998", Manual("anything under sub")),
        "pkg.mod.sub.f": Row("pkg.mod.sub.f", "NM998", Manual("f itself")),
    }
    assert row_for(rows, "pkg.mod.sub.f").action.step == "f itself"
    assert row_for(rows, "pkg.mod.sub.g").action.step == "anything under sub"
    assert row_for(rows, "pkg.mod.h").action.step == "anything under mod"
    assert row_for(rows, "pkg.mod").action.step == "anything under mod"
    assert row_for(rows, "pkg.model") is None


def test_a_prefix_row_answers_the_names_its_rule_lists():
    class PrefixRule(Rule):
        meta = RuleMeta("NM996", "test prefix", safety=MANUAL, example=Example("", ""))
        row_names = ("pkg.mod.a", "pkg.mod.b", "pkg.other.c")
        rows = (Row("pkg.mod.*", "NM996", Manual("gone")),)

    assert set(PrefixRule.calls) == set(PrefixRule.references) == {"pkg.mod.a", "pkg.mod.b"}


def test_a_rule_finding_uses_under_its_prefixes_reads_its_prefix_rows_itself():
    class UsesRule(Rule):
        meta = RuleMeta("NM992", "test uses", safety=MANUAL, example=Example("", ""))
        prefixes = ("pkg",)
        rows = (Row("pkg.mod.*", "NM992", Manual("gone")), Row("pkg.api", "NM992", Manual("use stock api")))

    assert set(UsesRule.calls) == set(UsesRule.references) == {"pkg.api"}
    assert row_for(UsesRule.row_table, "pkg.mod.f").action.step == "gone"


def test_a_prefix_row_that_no_rule_name_matches_is_refused():
    with pytest.raises(ValueError, match="matches none of the rule's row_names"):

        class Unmatched(Rule):
            meta = RuleMeta("NM991", "test unmatched", safety=MANUAL, example=Example("", ""))
            rows = (Row("pkg.mod.*", "NM991", Manual("gone")),)


def test_a_name_with_both_a_row_and_a_handler_is_refused():
    with pytest.raises(ValueError, match="both a row and a calls handler"):

        class Clash(Rule):
            meta = RuleMeta("NM995", "test clash", safety=MANUAL, example=Example("", ""))
            rows = (Row("pkg.f", "NM995", Manual("step")),)
            calls = {"pkg.f": "f"}


def test_a_rule_given_no_row_of_its_own_is_refused():
    with pytest.raises(ValueError, match="no row of this rule"):

        class Empty(Rule):
            meta = RuleMeta("NM994", "test empty", safety=MANUAL, example=Example("", ""))
            rows = TABLE


def test_every_row_of_a_family_table_belongs_to_a_registered_rule():
    from neuron_migrate.rules import tables

    registered = {rule.meta.id: rule for rule in all_rules()}
    for module in tables.family_tables():
        for row in module.ROWS:
            assert row in registered[row.rule].rows, f"{module.__name__}: {row.name} ({row.rule}) is answered by no rule"


def test_a_rule_can_decline_some_sites_of_its_rows():
    from neuron_migrate.rules.rows import answer_row

    class Declining(Rule):
        """Leaves calls with arguments to another rule, answers the rest from its row."""

        meta = RuleMeta("NM993", "test declining", safety=MANUAL, triggers=(b"legacy_pkg",), example=Example("", ""))
        rows = (Row("legacy_pkg.helpers.Mesh", "NM993", Manual("build a DeviceMesh")),)

        def apply_row(self, original, updated, qname):
            if getattr(original, "args", None):
                return updated
            return answer_row(self, original, updated, qname)

    plan = RulePlan(index=RuleIndex.build([Declining]), legacy_prefixes=())
    result = migrate_python("import legacy_pkg.helpers as h\n\na = h.Mesh(4)\nb = h.Mesh()\n", "t.py", plan)
    assert [f.span.line for f in result.findings if f.rule == "NM993"] == [4]


def test_a_pattern_row_covers_its_name_under_any_module_path():
    api = Row("pkg.**.mod.save", "NM992", Manual("save with dcp"))
    module = Row("pkg.**.kernels.*", "NM992", Manual("register the kernel"))
    assert api.is_pattern and not api.is_prefix and module.is_pattern and module.is_prefix
    assert api.covers("pkg.mod.save") and api.covers("pkg.a.b.mod.save") and api.covers("pkg.mod.save.inner")
    assert not api.covers("pkg.save") and not api.covers("pkg.other.save") and not api.covers("other.mod.save")
    assert module.covers("pkg.kernels") and module.covers("pkg.ops.kernels.flash") and not module.covers("pkg.kernel")


def test_a_pattern_row_is_read_by_the_rule_finding_uses_under_its_prefixes():
    class PatternRule(Rule):
        meta = RuleMeta("NM990", "test pattern", safety=MANUAL, example=Example("", ""))
        prefixes = ("pkg",)
        rows = (Row("pkg.**.api", "NM990", Manual("use stock api")), Row("pkg.**.mod.*", "NM990", Manual("gone")))

    # nothing to dispatch by exact name: the rule sees every use under pkg and picks the row itself
    assert PatternRule.calls == PatternRule.references == {}


def test_a_pattern_row_of_a_rule_dispatching_exact_names_is_refused():
    with pytest.raises(ValueError, match="pattern row pkg.\\*\\*.api needs a rule that finds the uses"):

        class ExactRule(Rule):
            meta = RuleMeta("NM989", "test exact", safety=MANUAL, example=Example("", ""))
            rows = (Row("pkg.**.api", "NM989", Manual("use stock api")),)
