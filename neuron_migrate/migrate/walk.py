"""A read-only walk over a LibCST tree, for visitors that only collect.

``node.visit(visitor)`` rebuilds every node it passes (LibCST's visitors and transformers share one
traversal), which costs about as much as parsing the file again. A visitor that only gathers facts
needs none of that: :func:`walk` calls the same ``visit_<Node>`` / ``leave_<Node>`` methods on the
same nodes, without building anything. Children come in field order, which is lexical order for
every node except a few parentheses and decorators: use it only where order does not matter.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(kind: type) -> tuple[str, ...]:
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind))
    return names


def children(node: cst.CSTNode):
    """The nodes directly under ``node``."""
    for name in _fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            yield value
        elif isinstance(value, (tuple, list)):
            for item in value:
                if isinstance(item, cst.CSTNode):
                    yield item


def walk(node: cst.CSTNode, visitor) -> None:
    """Visit ``node`` and everything under it with ``visitor``'s ``visit_<Node>`` methods (returning
    False skips a node's children) and ``leave_<Node>`` methods."""
    kind = type(node).__name__
    visit = getattr(visitor, "visit_" + kind, None)
    if visit is None or visit(node) is not False:
        for child in children(node):
            walk(child, visitor)
    leave = getattr(visitor, "leave_" + kind, None)
    if leave is not None:
        leave(node)
