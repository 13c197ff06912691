"""What the rule modules build on: rule metadata, the ``Rule`` class and the registry.

They are defined in :mod:`neuron_migrate.ruleapi`, the layer the engine builds on too; this module
names them for the rule families, which import them from here.
"""

from __future__ import annotations

from typing import ClassVar

from neuron_migrate.ruleapi import (
    MANUAL,
    REVIEW,
    SAFE,
    Edit,
    Example,
    Fact,
    RuleIndex,
    RuleMeta,
    StatementReplacement,
    all_rules,
    get_rule,
    marker_comment,
    provides,
    register,
    rule_with_role,
    rules_for,
    select_rules,
)
from neuron_migrate.ruleapi import Rule as _ApiRule
from neuron_migrate.rules.rows import install

__all__ = [
    "MANUAL",
    "REVIEW",
    "SAFE",
    "Edit",
    "Example",
    "Fact",
    "Rule",
    "RuleIndex",
    "RuleMeta",
    "StatementReplacement",
    "all_rules",
    "get_rule",
    "marker_comment",
    "provides",
    "register",
    "rule_with_role",
    "rules_for",
    "select_rules",
]


class Rule(_ApiRule):
    """The rule of the rule families: the API's rule, plus names answered by a table rather than by
    code (rules/rows.py). ``rows = FAMILY_ROWS`` keeps this rule's rows and adds their names to
    ``calls`` / ``references``. It lives here, not in the API layer, because the row machinery is
    part of the rules."""

    rows: ClassVar[tuple] = ()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "rows" in cls.__dict__:
            install(cls)
