"""What the rule modules build on: rule metadata, the ``Rule`` class and the registry.

They are defined in :mod:`neuron_migrate.ruleapi`, the layer the engine builds on too; this module
names them for the rule families, which import them from here.
"""

from __future__ import annotations

from neuron_migrate.ruleapi import (
    MANUAL,
    REVIEW,
    SAFE,
    Example,
    Rule,
    RuleIndex,
    RuleMeta,
    StatementReplacement,
    all_rules,
    get_rule,
    provides,
    register,
    rule_with_role,
    rules_for,
    select_rules,
)

__all__ = [
    "MANUAL",
    "REVIEW",
    "SAFE",
    "Example",
    "Rule",
    "RuleIndex",
    "RuleMeta",
    "StatementReplacement",
    "all_rules",
    "get_rule",
    "provides",
    "register",
    "rule_with_role",
    "rules_for",
    "select_rules",
]
