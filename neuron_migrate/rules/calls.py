"""Call-site and expression helpers shared by the rule families.

Reading a call against a legacy signature (which argument is which, and its value when it is a
literal), the names an expression reads, the small pieces of code a replacement is built from, and
where a call that becomes a comparison needs parentheses. Nothing here talks to the report: what
a rule says still goes through its FileContext.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence

import libcst as cst

from neuron_migrate.migrate.context import FileContext, code_of, root_name
from neuron_migrate.rules.base import Rule

# What :func:`literal` and :func:`arg_value` return for a value that is not a literal.
UNKNOWN = object()

# ``name=value``, spaced the way PEP 8 spaces keyword arguments.
_TIGHT_EQUAL = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


# ----- reading a call's arguments --------------------------------------------------------------


def bind_args(call: cst.Call, params: Sequence[str], other_keywords: bool = False) -> dict[str, cst.Arg] | None:
    """Map the arguments of ``call`` onto the legacy signature ``params``.

    None when the call cannot be read statically: ``*args`` or ``**kwargs``, more positionals than
    parameters, an argument given twice, or an unknown keyword unless ``other_keywords`` says the
    signature takes ``**kwargs`` (such keywords are then left out of the result).
    """
    bound: dict[str, cst.Arg] = {}
    for position, arg in enumerate(call.args):
        if arg.star:
            return None
        if arg.keyword is None:
            if position >= len(params):
                return None
            name = params[position]
        else:
            name = arg.keyword.value
            if name not in params:
                if other_keywords:
                    continue
                return None
        if name in bound:
            return None
        bound[name] = arg
    return bound


def first_argument(call: cst.Call, keyword: str) -> cst.BaseExpression | None:
    """The value given for a call's first parameter, named ``keyword``: the first plain positional
    argument or that keyword, whichever comes first.

    Unlike :func:`bind_args` this reads calls it cannot bind as a whole (``*args``, arguments it
    does not know): callers that only need the first parameter still get it there.
    """
    for arg in call.args:
        if (arg.keyword is None and not arg.star) or (arg.keyword is not None and arg.keyword.value == keyword):
            return arg.value
    return None


def literal(node: cst.CSTNode | None, *, single_token: bool = False):
    """The Python value of a literal expression (``True``, ``-1``, ``(0, 1)``, ``"a" "b"``), else
    :data:`UNKNOWN`.

    ``single_token`` accepts only ``True``/``False``/``None``, an integer or one string literal:
    signs, floats, containers and implicitly concatenated strings then give :data:`UNKNOWN`.
    """
    if node is None:
        return UNKNOWN
    if single_token and not isinstance(node, (cst.Name, cst.Integer, cst.SimpleString)):
        return UNKNOWN
    try:
        return ast.literal_eval(code_of(node).strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return UNKNOWN


def arg_value(bound: Mapping[str, cst.Arg], name: str, default=UNKNOWN, *, single_token: bool = False):
    """The :func:`literal` value of argument ``name`` of a bound call; ``default`` when it is not
    passed (the legacy default, where the caller knows it)."""
    arg = bound.get(name)
    return default if arg is None else literal(arg.value, single_token=single_token)


# ----- building arguments ----------------------------------------------------------------------


def keyword_arg(arg: cst.Arg, name: str) -> cst.Arg:
    """``arg`` passed as ``name=...`` (kept as it is when it already is)."""
    if arg.keyword is not None and arg.keyword.value == name:
        return arg
    return arg.with_changes(keyword=cst.Name(name), equal=_TIGHT_EQUAL)


def new_keyword(name: str, value: str) -> cst.Arg:
    """A new ``name=value`` argument from the code of its value."""
    return cst.Arg(keyword=cst.Name(name), value=cst.parse_expression(value), equal=_TIGHT_EQUAL)


def with_args(call: cst.Call, args: Sequence[cst.Arg]) -> cst.Call:
    """``call`` with the argument list ``args``, in the call's layout (one line, or one argument per line).

    An argument of ``call`` that ``args`` keeps (the same node, or one made from it: the same value,
    comma or keyword) keeps its comments: the comment lines above it and the one ending its line. The
    comment lines above an argument that goes move to the next argument kept, or above the closing
    parenthesis, as a deleted statement's move to the next statement; the comment ending its line goes
    with it. A new argument gets a line of its own in a one-argument-per-line call."""
    old = list(call.args)
    if not old or not args:
        return call.with_changes(args=list(args))
    tail = old[-1].whitespace_after_arg
    items, opening, tail = _relaid(old, list(args), call.whitespace_before_args, tail)
    out = []
    for position, (arg, origin) in enumerate(items):
        if position == len(items) - 1:
            before_comma = old[-1].whitespace_after_arg if isinstance(arg.comma, cst.Comma) else tail
        elif origin is not None and origin != len(old) - 1:
            before_comma = args[position].whitespace_after_arg
        else:
            before_comma = cst.SimpleWhitespace("")
        out.append(arg.with_changes(whitespace_after_arg=before_comma))
    return call.with_changes(args=out, whitespace_before_args=opening)


def with_elements(node: cst.Dict, elements: Sequence[cst.BaseDictElement]) -> cst.Dict:
    """``{...}`` with the entries ``elements``, each keeping its comments as :func:`with_args` says."""
    old = list(node.elements)
    if not old or not elements:
        return node.with_changes(elements=list(elements))
    items, opening, tail = _relaid(old, list(elements), node.lbrace.whitespace_after, node.rbrace.whitespace_before)
    return node.with_changes(
        elements=[element for element, _ in items],
        lbrace=node.lbrace.with_changes(whitespace_after=opening),
        rbrace=node.rbrace.with_changes(whitespace_before=tail),
    )


def _relaid(old: list, new: list, opening, tail):
    """The items ``new`` (arguments or dict entries) with the commas, line breaks and comments of ``old``
    (see :func:`with_args`): ``[(item, position in old or None)]``, the whitespace after the opening
    bracket, and the whitespace before the closing one when the last item has no comma."""
    layout = _Layout(old, opening, tail)
    origins = _origins(old, new)
    kept = {o for o in origins if o is not None}
    # comment lines to put above each new item, and above the closing bracket
    above: list[list[cst.EmptyLine]] = []
    seen = -1
    for origin in origins:
        lines: list[cst.EmptyLine] = []
        if origin is not None:
            for index in range(seen + 1, origin + 1):
                if index == origin or index not in kept:
                    lines += layout.above(index)
            seen = max(seen, origin)
        above.append(lines)
    footer = [line for index in range(seen + 1, len(old)) if index not in kept for line in layout.above(index)]
    footer += layout.footer()
    items = []
    for position, (item, origin) in enumerate(zip(new, origins)):
        comment = layout.trailing(origin)
        if position == len(new) - 1:
            item, tail = layout.closing(item, comment, footer)
        else:
            reused = origin is not None and origin != len(old) - 1
            comma = layout.separator(old[origin].comma if reused else None, comment, above[position + 1])
            item = item.with_changes(comma=comma)
        items.append((item, origin))
    return items, layout.opening(above[0]), tail


def _origins(old: list, new: list) -> list[int | None]:
    """For each new item, the position of the old item it was made from (None: a new one)."""
    taken: set[int] = set()
    out: list[int | None] = []
    for item in new:
        tests = (
            lambda o: o is item,
            lambda o: o.value is item.value,
            lambda o: isinstance(o.comma, cst.Comma) and o.comma is item.comma,
            lambda o: _name_of(o) is not None and _name_of(o) == _name_of(item),
        )
        origin = next((i for test in tests for i, o in enumerate(old) if i not in taken and test(o)), None)
        if origin is not None:
            taken.add(origin)
        out.append(origin)
    return out


def _name_of(item) -> str | None:
    """An argument's keyword or a dict entry's string key."""
    if isinstance(item, cst.Arg):
        return item.keyword.value if item.keyword is not None else None
    key = getattr(item, "key", None)
    return key.value if isinstance(key, cst.SimpleString) else None


class _Layout:
    """Where the comments and line breaks of a bracketed list are: LibCST keeps the comment ending an
    item's line and the comment lines above the next item in the whitespace after the item's comma
    (after the last item without a comma: ``tail``, the whitespace before the closing bracket)."""

    def __init__(self, items: list, opening, tail) -> None:
        self.items = items
        self.start = opening
        self.tail = tail
        commas = [item.comma for item in items[:-1] if isinstance(item.comma, cst.Comma)]
        self.sep = _bare(commas[0]) if commas else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        # a separator that ends its line, for a comment that needs one in a list written on one line
        broken = [c for c in commas if isinstance(c.whitespace_after, cst.ParenthesizedWhitespace)]
        self.line_sep = _bare(broken[0]) if broken else None

    def _after(self, index: int):
        """The whitespace after item ``index``: after its comma; for the last one, the line break up to the
        bracket (after its comma in a call, before the bracket in a dict or without a comma)."""
        item = self.items[index]
        if index < len(self.items) - 1:
            return item.comma.whitespace_after if isinstance(item.comma, cst.Comma) else None
        if isinstance(item.comma, cst.Comma) and isinstance(item.comma.whitespace_after, cst.ParenthesizedWhitespace):
            return item.comma.whitespace_after
        return self.tail

    def above(self, index: int) -> list[cst.EmptyLine]:
        """The comment lines above item ``index`` (those above the first one stay after the bracket)."""
        if index == 0:
            return []
        after = self._after(index - 1)
        return list(after.empty_lines) if isinstance(after, cst.ParenthesizedWhitespace) else []

    def trailing(self, index: int | None) -> cst.TrailingWhitespace:
        """The end of item ``index``'s line: its comment, if any."""
        after = self._after(index) if index is not None else None
        return after.first_line if isinstance(after, cst.ParenthesizedWhitespace) else cst.TrailingWhitespace()

    def footer(self) -> list[cst.EmptyLine]:
        after = self._after(len(self.items) - 1)
        return list(after.empty_lines) if isinstance(after, cst.ParenthesizedWhitespace) else []

    def opening(self, lines: list[cst.EmptyLine]):
        if not lines:
            return self.start
        if isinstance(self.start, cst.ParenthesizedWhitespace):
            return self.start.with_changes(empty_lines=[*self.start.empty_lines, *lines])
        if self.line_sep is not None:
            return self.line_sep.whitespace_after.with_changes(empty_lines=lines)
        return self.start  # a list written on one line has no comment lines to keep

    def separator(self, comma, comment: cst.TrailingWhitespace, lines: list[cst.EmptyLine]):
        base = _bare(comma) if isinstance(comma, cst.Comma) else self.sep
        if not isinstance(base.whitespace_after, cst.ParenthesizedWhitespace):
            if comment.comment is None and not lines:
                return base
            base = self.line_sep or base
        return _ending(base, comment, lines)

    def closing(self, item, comment: cst.TrailingWhitespace, lines: list[cst.EmptyLine]):
        """The last item and the whitespace before the closing bracket."""
        last = self.items[-1]
        comma = last.comma if isinstance(last.comma, cst.Comma) else cst.MaybeSentinel.DEFAULT
        if isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace):
            return item.with_changes(comma=_ending(comma, comment, lines)), self.tail
        after = self.tail
        if isinstance(after, cst.ParenthesizedWhitespace):
            after = after.with_changes(first_line=comment, empty_lines=lines)
        elif comment.comment is not None or lines:
            after = cst.ParenthesizedWhitespace(first_line=comment, empty_lines=lines, indent=True)
        return item.with_changes(comma=comma), after


def _bare(comma: cst.Comma) -> cst.Comma:
    """``comma`` without the comments of the lines it spans (its line break and indentation kept)."""
    return _ending(comma, cst.TrailingWhitespace(), [])


def _ending(comma: cst.Comma, comment: cst.TrailingWhitespace, lines: list[cst.EmptyLine]) -> cst.Comma:
    """``comma`` ending its line with ``comment``, with the comment ``lines`` below it."""
    after = comma.whitespace_after
    if isinstance(after, cst.ParenthesizedWhitespace):
        return comma.with_changes(whitespace_after=after.with_changes(first_line=comment, empty_lines=lines))
    if comment.comment is None and not lines:
        return comma
    line = cst.ParenthesizedWhitespace(first_line=comment, empty_lines=lines, indent=True)
    return comma.with_changes(whitespace_after=line)


def spread_arguments(arg: cst.Arg | None) -> str:
    """An ``args=(a, b)`` argument as call arguments: ``a, b``, or ``*args`` when not a literal."""
    if arg is None:
        return ""
    value = arg.value
    if isinstance(value, (cst.Tuple, cst.List)):
        return ", ".join(_element_code(element) for element in value.elements)
    return f"*{receiver(value)}"


def _element_code(element: cst.BaseElement) -> str:
    """A tuple/list element as a call argument (``*rest`` stays starred)."""
    prefix = "*" if isinstance(element, cst.StarredElement) else ""
    return prefix + code_of(element.value)


# ----- expressions -----------------------------------------------------------------------------


def receiver(expr: cst.BaseExpression) -> str:
    """Code for ``expr`` that can be followed by ``.attr`` or ``(...)`` without changing its meaning."""
    text = code_of(expr)
    if isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or getattr(expr, "lpar", None):
        return text
    return f"({text})"


def is_plain_reference(node: cst.BaseExpression) -> bool:
    """``x`` or ``self.x``: cheap and side-effect free to name several times."""
    return root_name(node) != ""


def has_params(node: cst.Lambda) -> bool:
    """Whether the lambda takes any parameter at all."""
    params = node.params
    return bool(params.params or params.posonly_params or params.kwonly_params or params.star_kwarg) or isinstance(
        params.star_arg, cst.Param
    )


class _VariableNames(cst.CSTVisitor):
    """The ``Name`` nodes of an expression that read or bind a variable."""

    def __init__(self) -> None:
        super().__init__()
        self.nodes: list[cst.Name] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.nodes.append(node)

    # `torch.tensor` and `f(tensor=x)` do not bind or read a variable named `tensor`.
    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False


def name_nodes(node: cst.CSTNode) -> list[cst.Name]:
    """The ``Name`` nodes under ``node`` that stand for variables (not attributes or keywords)."""
    collector = _VariableNames()
    node.visit(collector)
    return collector.nodes


def names_in(node: cst.CSTNode) -> set[str]:
    """The variable names ``node`` reads or binds (attribute and keyword names left out)."""
    return {name.value for name in name_nodes(node)}


# ----- where a call stands ---------------------------------------------------------------------


class ComparisonRule(Rule):
    """Base of rules that replace a call by a comparison (``x == 0``): records the calls that are an
    operand of another comparison or of an arithmetic, bitwise or unary operator, where the
    comparison needs parentheses to keep its meaning (``needs_parentheses``)."""

    # ``not x == 0`` already means ``not (x == 0)``; a rule may still want the parentheses for readers.
    PARENTHESIZE_AFTER_NOT = True

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.tight_operands: set[int] = set()

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self.tight_operands.add(id(node.left))
        self.tight_operands.update(id(target.comparator) for target in node.comparisons)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self.tight_operands.update((id(node.left), id(node.right)))

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if self.PARENTHESIZE_AFTER_NOT or not isinstance(node.operator, cst.Not):
            self.tight_operands.add(id(node.expression))

    def needs_parentheses(self, original: cst.CSTNode) -> bool:
        return id(original) in self.tight_operands
