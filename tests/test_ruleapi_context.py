"""The rule API's own types: the context a Python rule asks (RuleContext), which the engine's FileContext
satisfies, and the roles the engine reads of a rule (ruleapi/roles.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper

import neuron_migrate
from neuron_migrate.migrate.context import FileContext
from neuron_migrate.ruleapi import SAFE, Example, Rule, RuleContext, RuleMeta, registry, rule_with_role
from neuron_migrate.ruleapi.roles import ROLES, role_members

PACKAGE = Path(neuron_migrate.__file__).parent


def _file_context() -> FileContext:
    module = cst.parse_module("import torch_xla.core.xla_model as xm\n\nxm.mark_step()\n")
    return FileContext(path="t.py", wrapper=MetadataWrapper(module, unsafe_skip_copy=True))


def _protocol_members() -> set[str]:
    return {name for klass in RuleContext.__mro__[:-1] for name in vars(klass) if not name.startswith("_")} | set(
        RuleContext.__annotations__
    )


def test_the_engines_file_context_is_a_rule_context():
    assert isinstance(_file_context(), RuleContext)


def test_a_context_lacking_a_member_is_not_one():
    class Partial:
        path = "t.py"

        def manual(self, node, message, fix=""):
            pass

    assert not isinstance(Partial(), RuleContext)


def test_every_member_of_the_file_context_a_rule_uses_is_declared():
    # what the rules read on a context (``self.ctx.x``, ``ctx.x``) that the engine's FileContext has:
    # the shell rules' ShellEdits members are other names
    context = _file_context()
    used = set()
    for path in (PACKAGE / "rules").rglob("*.py"):
        used |= set(re.findall(r"\bctx\.([A-Za-z_]\w*)", path.read_text(encoding="utf-8")))
    from_engine = {name for name in used if hasattr(context, name)}
    assert from_engine, "no member found: the scan is broken"
    assert from_engine - _protocol_members() == set()


def test_the_rule_api_names_no_module_of_the_engine_or_the_rules_even_for_types():
    for path in (PACKAGE / "ruleapi").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = []
            if isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            above = [m for m in modules if m.startswith(("neuron_migrate.migrate", "neuron_migrate.rules"))]
            assert not above, f"{path.name} imports {above}"


@pytest.mark.parametrize("role", sorted(ROLES))
def test_the_rule_playing_a_role_has_what_the_role_declares(role):
    rule = rule_with_role(role)
    assert all(hasattr(rule, name) for name in role_members(ROLES[role]))


def test_what_the_engine_reads_of_the_shim_and_the_leftover_rules_is_declared():
    engine = (PACKAGE / "migrate" / "engine.py").read_text(encoding="utf-8")
    read = set(re.findall(r"\b(?:shim_rule|plan\.shim|self\.shim|rule)\.([A-Z][A-Z_]+)\b", engine))
    assert read and read <= set(role_members(ROLES["shim"])), read - set(role_members(ROLES["shim"]))


def test_the_registry_refuses_a_rule_lacking_what_its_role_declares(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_BY_ROLE", {})
    bare = type("Bare", (Rule,), {"role": "shim", "meta": RuleMeta("NM998", "t", SAFE, example=Example("", ""))})
    with pytest.raises(ValueError, match="the 'shim' role needs GONE_MESSAGE"):
        registry.register(bare)
