"""The layout of the rule families: a family is a package with one module per rule, named after it,
whose docstring names the rule id; its ``__init__`` exports every name it lists."""

from __future__ import annotations

import importlib
import re
import sys
from collections import Counter

import pytest

from neuron_migrate.rules import FAMILIES
from neuron_migrate.ruleapi import registry

# Families that stay one module.
SINGLE_MODULE = {"leftovers", "notebooks"}
PACKAGES = [name for name in FAMILIES if name not in SINGLE_MODULE]


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _rules():
    return registry.all_rules()  # loads every family


def test_every_family_but_the_single_module_ones_is_a_package():
    for name in FAMILIES:
        module = importlib.import_module(f"neuron_migrate.rules.{name}")
        assert hasattr(module, "__path__") == (name not in SINGLE_MODULE), name


def test_each_rule_of_a_package_has_a_module_of_its_own_named_after_it():
    in_packages = [rule for rule in _rules() if rule.__module__.count(".") == 3]
    assert len(in_packages) > 100
    assert not [m for m, n in Counter(rule.__module__ for rule in in_packages).items() if n > 1]
    for rule in in_packages:
        family, leaf = rule.__module__.split(".")[2:]
        assert family in PACKAGES, rule.__module__
        assert leaf == _snake(rule.__name__), rule.__module__
        assert sys.modules[rule.__module__].__doc__.startswith(f"{rule.meta.id}"), rule.__module__


@pytest.mark.parametrize("family", PACKAGES)
def test_a_package_exports_its_rules_and_every_name_it_lists(family):
    package = importlib.import_module(f"neuron_migrate.rules.{family}")
    assert all(hasattr(package, name) for name in package.__all__)
    own = {rule.__name__ for rule in _rules() if rule.__module__.startswith(f"{package.__name__}.")}
    assert own and own <= set(package.__all__)
