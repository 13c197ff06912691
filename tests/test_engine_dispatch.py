"""How the engine reaches rules cheaply without changing what they see: hooks by qualified-name
prefix, positions and code from one code generation, and the read-only walk."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from neuron_migrate.migrate.engine import RulePlan, migrate_python
from neuron_migrate.migrate.imports import _UsedNames
from neuron_migrate.migrate.positions import code_and_ranges
from neuron_migrate.migrate.walk import walk
from neuron_migrate.rules.base import MANUAL, SAFE, Example, Rule, RuleIndex, RuleMeta


class SeesEveryCall(Rule):
    meta = RuleMeta("NM997", "every call", safety=SAFE, triggers=(b"legacy_pkg",), example=Example("", ""))
    seen: list[str] = []

    def leave_Call(self, original, updated):
        type(self).seen.append(f"{self.meta.id} {self.ctx.code(original.func)}")
        return updated


class SeesLegacyNames(Rule):
    meta = RuleMeta("NM998", "legacy names", safety=MANUAL, triggers=(b"legacy_pkg",), example=Example("", ""))
    prefixes = ("legacy_pkg.sub",)

    def leave_Call(self, original, updated):
        SeesEveryCall.seen.append(f"{self.meta.id} call {self.ctx.code(original.func)}")
        return updated

    def leave_Attribute(self, original, updated):
        SeesEveryCall.seen.append(f"{self.meta.id} attribute {self.ctx.code(original)}")
        return updated

    def leave_Name(self, original, updated):
        SeesEveryCall.seen.append(f"{self.meta.id} name {original.value}")
        return updated


def test_a_rule_with_prefixes_sees_only_the_nodes_named_under_them():
    index = RuleIndex.build([SeesEveryCall, SeesLegacyNames])
    assert index.hooks["leave_Call"] == [SeesEveryCall]
    assert index.named["leave_Call"] == {"legacy_pkg.sub": [SeesLegacyNames]}
    plan = RulePlan(index=index, legacy_prefixes=("legacy_pkg",))
    SeesEveryCall.seen = []
    source = (
        "import legacy_pkg.sub as s\n"
        "from legacy_pkg import other\n\n"
        "s.run(print(1))\n"
        "other.run()\n"
        "x = s.flag\n"
    )
    migrate_python(source, "t.py", plan)
    assert SeesEveryCall.seen == [
        # the callee is left before the arguments, and both before the call, which both rules see in rule order
        "NM998 name s",
        "NM998 attribute s.run",
        "NM997 print",
        "NM997 s.run",
        "NM998 call s.run",
        "NM997 other.run",
        "NM998 name s",
        "NM998 attribute s.flag",
    ]


def test_named_rules_match_a_name_and_its_dotted_parents_only():
    index = RuleIndex.build([SeesLegacyNames])
    assert index.named_rules("leave_Name", {"legacy_pkg.sub.f.g"}) == [SeesLegacyNames]
    assert index.named_rules("leave_Name", {"legacy_pkg.sub"}) == [SeesLegacyNames]
    assert index.named_rules("leave_Name", {"legacy_pkg.subway", "legacy_pkg"}) == []
    assert index.named_rules("leave_Dict", {"legacy_pkg.sub"}) == []


SAMPLES = [
    "x = 1\n",
    "@dec(a)\ndef f(a: int = 2, *args, **kw) -> 'T':\n    '''doc'''\n    return (a if a else [b for b in kw])\n",
    "class C(Base, metaclass=M):\n    # comment\n\n    x: int = 3\n    def m(self): pass\n",
    "try:\n    import torch_xla\nexcept ImportError:  # no xla\n    xm = None\nelse:\n    pass\nfinally:\n    y = f'{a!r:>{w}}'\n",
    "with open(p) as f, ctx():\n    data = f.read()[1:2, ::3]\r\nwhile True:\r\n    break\r\n",
    "if a:\n    pass\nelif b: c = lambda q, *, r=1: q @ r\nelse:\n    del z\n",
    "async def g():\n    async with a as b:\n        await c\n    async for i in d:\n        yield i\n",
    "match p:\n    case [1, *rest] if rest:\n        pass\n    case {'k': v, **kw}:\n        pass\n    case Point(x=0) | None:\n        pass\n",
    "x = (\n    1 +  # one\n    2\n)\ns = 'a' 'b' \\\n    'c'\n",
]


@pytest.mark.parametrize("source", SAMPLES)
def test_positions_and_code_are_those_libcst_gives(source):
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    code, ranges = code_and_ranges(module)
    assert code == module.code
    assert len(ranges) == len(expected)
    for node, where in expected.items():
        assert ranges[id(node)] == (where.start.line, where.start.column, where.end.line, where.end.column), node


@pytest.mark.parametrize("source", SAMPLES)
def test_the_walk_collects_what_the_libcst_visit_collects(source):
    module = cst.parse_module(source)
    by_visit, by_walk = _UsedNames(), _UsedNames()
    cst.CSTVisitor.__init__(by_visit)
    module.visit(by_visit)
    walk(module, by_walk)
    assert (by_walk.names, by_walk.strings, by_walk.rebound) == (by_visit.names, by_visit.strings, by_visit.rebound)
    assert by_walk.names  # every sample reads some name
