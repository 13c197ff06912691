"""The dispatch index the engine builds once per run from the selected rule classes."""

from __future__ import annotations

from dataclasses import dataclass, field

from neuron_migrate.ruleapi.rule import Rule


@dataclass
class RuleIndex:
    """Dispatch tables the engine builds once per run from the selected rule classes."""

    rules: list[type[Rule]]
    calls: dict[str, list[tuple[type[Rule], str]]] = field(default_factory=dict)
    references: dict[str, list[tuple[type[Rule], str]]] = field(default_factory=dict)
    hooks: dict[str, list[type[Rule]]] = field(default_factory=dict)

    @classmethod
    def build(cls, rules: list[type[Rule]]) -> RuleIndex:
        index = cls(rules=list(rules))
        for rule in rules:
            for qname, method in rule.calls.items():
                index.calls.setdefault(qname, []).append((rule, method))
            for qname, method in rule.references.items():
                index.references.setdefault(qname, []).append((rule, method))
            for hook in rule.node_hooks():
                index.hooks.setdefault(hook, []).append(rule)
        return index

    def triggers(self) -> tuple[bytes, ...]:
        words: set[bytes] = set()
        for rule in self.rules:
            words.update(rule.meta.triggers)
        return tuple(sorted(words))
