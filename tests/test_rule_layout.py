"""The layout of the rule families: a family is a package with one module per rule, named after it,
whose docstring names the rule id; a rule is found where it is defined, with no list naming it."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import textwrap
from collections import Counter

from neuron_migrate.ruleapi import registry

# Families that stay one module.
SINGLE_MODULE = {"leftovers", "notebooks"}


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _rules():
    return registry.all_rules()  # loads every module of the rules package


def test_a_rule_outside_a_package_is_one_of_the_single_module_families():
    top_level = {rule.__module__.split(".")[2] for rule in _rules() if rule.__module__.count(".") == 2}
    assert top_level == SINGLE_MODULE
    for name in SINGLE_MODULE:
        assert not hasattr(importlib.import_module(f"neuron_migrate.rules.{name}"), "__path__"), name


def test_each_rule_of_a_package_has_a_module_of_its_own_named_after_it():
    in_packages = [rule for rule in _rules() if rule.__module__.count(".") == 3]
    assert len(in_packages) > 100
    assert not [m for m, n in Counter(rule.__module__ for rule in in_packages).items() if n > 1]
    for rule in in_packages:
        leaf = rule.__module__.split(".")[3]
        assert leaf == _snake(rule.__name__), rule.__module__
        assert sys.modules[rule.__module__].__doc__.startswith(f"{rule.meta.id}"), rule.__module__


def test_a_package_exports_every_name_it_lists():
    packages = {rule.__module__.rsplit(".", 1)[0] for rule in _rules() if rule.__module__.count(".") == 3}
    assert len(packages) > 10
    for name in packages:
        package = importlib.import_module(name)
        assert all(hasattr(package, listed) for listed in getattr(package, "__all__", ())), name


def test_a_new_rule_module_is_found_without_being_listed(tmp_path):
    # A rule module dropped into a family, mentioned nowhere else, is in the registry of a fresh process.
    family = tmp_path / "neuron_migrate" / "rules" / "xla_debug"
    module = textwrap.dedent(
        '''\
        """NM999: a rule added by a contributor"""

        from neuron_migrate.rules.base import SAFE, Rule, RuleMeta, register


        @register
        class ContributedRule(Rule):
            meta = RuleMeta("NM999", "a rule added by a contributor", safety=SAFE, summary="x")
        '''
    )
    script = textwrap.dedent(
        f"""\
        import pathlib, neuron_migrate.rules.xla_debug as family
        family.__path__.append({str(family)!r})
        from neuron_migrate.ruleapi import registry
        print(registry.get_rule("NM999").__name__)
        """
    )
    family.mkdir(parents=True)
    (family / "contributed_rule.py").write_text(module, encoding="utf-8")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "ContributedRule", result.stderr
