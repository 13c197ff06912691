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
