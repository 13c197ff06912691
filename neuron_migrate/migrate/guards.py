"""Dual-stack guards: the statements that make code run only where the legacy stack is installed.

``try: import torch_xla ... except ImportError:`` and ``if is_torch_xla_available():``. By default the
engine migrates the code under them like any other code and the import pass makes a ``try`` test for
TorchNeuron instead; with --keep-dual-stack they are kept. The availability checks that make an ``if``
a guard are the shim rule's data (``guard_names``), never spelled here.
"""

from __future__ import annotations

import libcst as cst

_EMPTY = cst.Module(body=[])


def _code(node: cst.CSTNode) -> str:
    return _EMPTY.code_for_node(node)


def _is_legacy(dotted: str, legacy_prefixes: tuple[str, ...]) -> bool:
    return any(dotted == p or dotted.startswith(p + ".") for p in legacy_prefixes)


def is_legacy_import_block(block, legacy_prefixes: tuple[str, ...]) -> bool:
    """Does one of the lines directly in ``block`` import a legacy module?"""
    for stmt in getattr(block, "body", ()):
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Import):
                names = [_code(a.name) for a in small.names]
            elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
                module = _code(small.module)
                names = [module]
                if not isinstance(small.names, cst.ImportStar):
                    names += [f"{module}.{_code(a.name)}" for a in small.names]
            else:
                continue
            if any(_is_legacy(n, legacy_prefixes) for n in names):
                return True
    return False


def is_shim(node: cst.CSTNode, legacy_prefixes: tuple[str, ...], guard_names=()) -> bool:
    """A dual-stack guard: ``try: import torch_xla ...`` (any handler), or an ``if`` whose test calls one
    of ``guard_names`` (``if is_torch_xla_available():``)."""
    if isinstance(node, cst.Try):
        return is_legacy_import_block(node.body, legacy_prefixes)
    if isinstance(node, cst.If) and guard_names:
        test = _code(node.test)
        return any(guard in test for guard in guard_names)
    return False


def only_tests(test: cst.BaseExpression) -> bool:
    """Does evaluating ``test`` do nothing but test: names, attributes, literals, comparisons, boolean
    operators, and calls of availability checks (``is_torch_neuron_available()``)? Then an ``if`` with
    nothing left under it can go."""
    finder = _Calls()
    test.visit(finder)
    return all(name.startswith("is_") and name.endswith("_available") for name in finder.names)


class _Calls(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: list[str] = []

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        self.names.append(func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", ""))
