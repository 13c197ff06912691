"""The dispatch index the engine builds once per run from the selected rule classes."""

from __future__ import annotations

from dataclasses import dataclass, field

from neuron_migrate.ruleapi.rule import Rule

# The hooks a rule with ``prefixes`` gets only for the nodes named under them.
NAMED_HOOKS = frozenset({"leave_Call", "leave_Attribute", "leave_Name"})


@dataclass
class RuleIndex:
    """Dispatch tables the engine builds once per run from the selected rule classes."""

    rules: list[type[Rule]]
    calls: dict[str, list[tuple[type[Rule], str]]] = field(default_factory=dict)
    references: dict[str, list[tuple[type[Rule], str]]] = field(default_factory=dict)
    # hook name -> the rules called with every node of that type
    hooks: dict[str, list[type[Rule]]] = field(default_factory=dict)
    # hook name -> qualified-name prefix -> the rules called with the nodes named under that prefix
    named: dict[str, dict[str, list[type[Rule]]]] = field(default_factory=dict)
    # rule -> its place in ``rules``: hooks run in that order, whichever table they come from
    order: dict[type[Rule], int] = field(default_factory=dict)

    @classmethod
    def build(cls, rules: list[type[Rule]]) -> RuleIndex:
        index = cls(rules=list(rules))
        for position, rule in enumerate(rules):
            index.order[rule] = position
            for qname, method in rule.calls.items():
                index.calls.setdefault(qname, []).append((rule, method))
            for qname, method in rule.references.items():
                index.references.setdefault(qname, []).append((rule, method))
            for hook in rule.node_hooks():
                if hook in NAMED_HOOKS and rule.prefixes:
                    by_prefix = index.named.setdefault(hook, {})
                    for prefix in rule.prefixes:
                        by_prefix.setdefault(prefix, []).append(rule)
                else:
                    index.hooks.setdefault(hook, []).append(rule)
        return index

    def named_rules(self, hook: str, qnames) -> list[type[Rule]]:
        """The rules whose ``hook`` answers a node with these qualified names: those with a prefix
        equal to a name or to one of its dotted parents, in rule order."""
        by_prefix = self.named.get(hook)
        if not by_prefix:
            return []
        found: set[type[Rule]] = set()
        for qname in qnames:
            end = len(qname)
            while end > 0:
                found.update(by_prefix.get(qname[:end], ()))
                end = qname.rfind(".", 0, end)
        return sorted(found, key=self.order.__getitem__)

    def triggers(self) -> tuple[bytes, ...]:
        words: set[bytes] = set()
        for rule in self.rules:
            words.update(rule.meta.triggers)
        return tuple(sorted(words))
