"""The layers of the package and the rule API between the engine and the rules.

The import contracts live in ``[tool.importlinter]`` of pyproject.toml; ``lint-imports`` checks them
here, so CI does. The rest checks what the contracts cannot see: that the registry finds every role
and adapter hook, and that a real rewrite leaves torch unimported.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from neuron_migrate.ruleapi import (
    KIND_HOOKS,
    ROLES,
    SAFE,
    Example,
    Rule,
    RuleMeta,
    hooks_for,
    register,
    registry,
    rule_with_role,
)

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports() -> str:
    found = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")
    assert found, "lint-imports is not installed: install the test extra (pip install -e '.[test]')"
    return found


def test_import_contracts_hold():
    result = subprocess.run(
        [_lint_imports(), "--no-cache", "--config", str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def _import_cycles(package: str) -> list[list[str]]:
    """The groups of modules that import each other, directly or not (function-level imports count;
    imports under TYPE_CHECKING do not, they never run)."""
    import grimp

    graph = grimp.build_graph(package, exclude_type_checking_imports=True)
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        order[module] = low[module] = len(order)
        stack.append(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in order:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], order[imported])
        if low[module] == order[module]:
            group = stack[stack.index(module) :]
            del stack[stack.index(module) :]
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in order:
            visit(module)
    return cycles


def test_no_module_imports_itself_back():
    # The layer contracts see imports between layers; a cycle inside one layer (a family's common.py
    # importing the rules built on it) is only seen here.
    assert _import_cycles("neuron_migrate") == []


def test_the_cycle_finder_finds_cycles():
    # in the standard library's email package, message, policy and contentmanager import each other
    assert ["email.contentmanager", "email.message", "email.policy"] in _import_cycles("email")


def test_every_role_is_played_by_one_rule():
    played = {role: rule_with_role(role) for role in ROLES}
    assert all(played.values()), [role for role, rule in played.items() if rule is None]
    assert {role: rule.role for role, rule in played.items()} == {role: role for role in ROLES}
    # what the engine and the adapters read of each role
    assert played["leftover"].legacy_modules and "torch_xla" in played["leftover"].legacy_modules
    assert played["leftover"].message_for("torch_xla.core.xla_model.xla_device_kind")
    assert played["shim"].MESSAGE and "{name}" in played["shim"].USE_MESSAGE
    assert "{problem}" in played["unparsable-cell"].MESSAGE
    assert played["neuron-index"].MARKER and played["requirement-hashes"].MARKER
    assert played["unparsable-cell"].meta.kind == "notebook"
    assert played["neuron-index"].meta.kind == played["requirement-hashes"].meta.kind == "requirements"


def test_a_role_is_found_only_among_the_selected_rules():
    leftover = rule_with_role("leftover")
    assert rule_with_role("leftover", [leftover]) is leftover
    assert rule_with_role("leftover", [rule_with_role("shim")]) is None
    assert rule_with_role("leftover", []) is None
    with pytest.raises(ValueError, match="unknown role"):
        rule_with_role("no-such-role")


def test_every_adapter_hook_is_provided():
    assert callable(hooks_for("shell")) and callable(hooks_for("dockerfile"))
    table = hooks_for("requirements")
    requirement = table.parse_requirement("torch-xla==2.1.2")
    change = table.plan_change(requirement, table.stack_of([requirement]))
    assert change.replacement == ("torch>=2.13",) and change.rule == "NM530"
    assert table.is_neuron_index("--extra-index-url https://pip.repos.neuron.amazonaws.com")
    assert set(KIND_HOOKS) == {"shell", "dockerfile", "requirements"}
    with pytest.raises(LookupError):
        hooks_for("python")


def _rule(rule_id: str, role: str) -> type[Rule]:
    return type(
        f"Rule{rule_id}",
        (Rule,),
        {"role": role, "meta": RuleMeta(rule_id, "t", SAFE, example=Example("", ""))},
    )


def test_the_registry_refuses_an_unknown_or_a_second_role(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_BY_ROLE", dict(registry._BY_ROLE))
    with pytest.raises(ValueError, match="unknown role"):
        register(_rule("NM998", "cleanup"))
    with pytest.raises(ValueError, match="taken twice"):
        register(_rule("NM999", "leftover"))
    with pytest.raises(ValueError, match="no adapter hooks"):
        registry.provides("python")


_PROBE = textwrap.dedent(
    """
    import json, sys
    from neuron_migrate.cli import app
    try:
        app(["rewrite", "--check", "--no-cache", "--jobs", "1", sys.argv[1]], prog_name="neuron-migrate")
    except SystemExit:
        pass
    import neuron_migrate.ruleapi.registry as registry
    print(json.dumps({"rules": len(registry._REGISTRY), "torch": "torch" in sys.modules}))
    """
)


def test_a_rewrite_never_imports_torch(tmp_path):
    """Every rule family loads and every adapter runs, and torch stays out of the process."""
    (tmp_path / "train.py").write_text("import torch_xla.core.xla_model as xm\n\nxm.mark_step()\n")
    (tmp_path / "run.sh").write_text("export XLA_USE_BF16=1\nneuron_parallel_compile torchrun train.py\n")
    (tmp_path / "requirements.txt").write_text("torch-xla==2.1.2\n")
    (tmp_path / "Dockerfile").write_text("FROM public.ecr.aws/neuron/pytorch-training-neuronx:2.1.2-neuronx-py310\n")
    # a cell that does not parse: the notebook adapter reports it through the rule playing "unparsable-cell"
    source = ["import torch_xla\n", "xm.mark_step(\n"]
    cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": source}
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "nb.ipynb").write_text(json.dumps(notebook))
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, str(tmp_path)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    *output, last = result.stdout.strip().splitlines()
    # each adapter ran its rules: Python, shell, requirements, Dockerfile, notebook
    for finding in ("train.py:3:1: NM110", "run.sh:2:1: NM510", "requirements.txt:1:1: NM530", "Dockerfile:1:1: NM521"):
        assert finding in result.stdout, result.stdout
    assert any(line.startswith("nb.ipynb") and "NM550" in line for line in output), result.stdout
    seen = json.loads(last)
    assert seen["rules"] > 100 and seen["torch"] is False
