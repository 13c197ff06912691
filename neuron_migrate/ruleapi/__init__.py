"""The rule API: what a rule is, and the registry through which the engine and the adapters find rules.

The layer between the engine (``neuron_migrate.migrate``) and the rule families (``neuron_migrate.rules``):
the engine builds on this package only, the families build on this package and on the engine's
modules, and they register here when loaded. ``neuron_migrate.rules.base`` re-exports it for the
rule modules.
"""

from __future__ import annotations

from neuron_migrate.report.model import MANUAL, REVIEW, SAFE
from neuron_migrate.ruleapi.context import RuleContext
from neuron_migrate.ruleapi.facts import Fact, Facts
from neuron_migrate.ruleapi.index import RuleIndex
from neuron_migrate.ruleapi.registry import (
    KIND_HOOKS,
    ROLES,
    all_rules,
    get_rule,
    hooks_for,
    provides,
    register,
    rule_with_role,
    rules_for,
    select_rules,
)
from neuron_migrate.ruleapi.reporter import Reporter, marker_comment, marker_text
from neuron_migrate.ruleapi.rule import Edit, Example, Rule, RuleMeta, StatementReplacement, ordered_risks, rule_dict

__all__ = [
    "KIND_HOOKS",
    "MANUAL",
    "REVIEW",
    "ROLES",
    "SAFE",
    "Edit",
    "Example",
    "Fact",
    "Facts",
    "Reporter",
    "Rule",
    "RuleContext",
    "RuleIndex",
    "RuleMeta",
    "StatementReplacement",
    "all_rules",
    "get_rule",
    "hooks_for",
    "marker_comment",
    "marker_text",
    "ordered_risks",
    "provides",
    "register",
    "rule_dict",
    "rule_with_role",
    "rules_for",
    "select_rules",
]
