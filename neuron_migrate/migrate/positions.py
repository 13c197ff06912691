"""A module's code and the position of every node in it, from one code generation.

LibCST's PositionProvider does the same with a regular expression per token and a generator-based
context manager per node; a rewrite asks for positions in nearly every file, so this cheaper
state computes them together with the module's code, with the provider's exact semantics
(syntactic positions: leading whitespace and comments excluded where the provider excludes them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst
from libcst._nodes.internal import CodegenState

_NEWLINE = re.compile(r"\r\n?|\n")

# (start line, start column, end line, end column): lines from 1, columns from 0, as LibCST counts
Range = tuple[int, int, int, int]


@dataclass
class _PositionState(CodegenState):
    line: int = 1
    column: int = 0
    # id(node) -> its range; the tree stays alive with the context, so ids are stable
    ranges: dict[int, Range] = field(default_factory=dict)
    starts: list[tuple[int, int]] = field(default_factory=list)

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self._advance(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self._advance(value)

    def _advance(self, value: str) -> None:
        if "\n" in value or "\r" in value:
            segments = _NEWLINE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.starts.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        line, column = self.starts.pop()
        # a syntactic position recorded inside the node's code wins
        self.ranges.setdefault(id(node), (line, column, self.line, self.column))

    def record_syntactic_position(self, node, *, start_node=None, end_node=None) -> _Syntactic:
        return _Syntactic(self, node, start_node, end_node)


class _Syntactic:
    """``with state.record_syntactic_position(node, ...)``: the node's range is what is generated
    inside the block, or starts at ``start_node`` / ends at ``end_node`` when given."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: _PositionState, node, start_node, end_node) -> None:
        self.state = state
        self.node = node
        self.start_node = start_node
        self.end_node = end_node

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, *exc) -> bool:
        state = self.state
        start = self.start
        end = (state.line, state.column)
        if self.start_node is not None:
            start = state.ranges[id(self.start_node)][:2]
        if self.end_node is not None:
            end = state.ranges[id(self.end_node)][2:]
        state.ranges[id(self.node)] = (*start, *end)
        return False


def code_and_ranges(module: cst.Module) -> tuple[str, dict[int, Range]]:
    """``module.code`` and the syntactic range of each node of ``module``, keyed by node id."""
    state = _PositionState(default_indent=module.default_indent, default_newline=module.default_newline)
    module._codegen(state)
    return "".join(state.tokens), state.ranges
