"""What the file scan finds in a training script, and the small readers it and the rules share.

A call is rewritten when the engine leaves it, but what it becomes can depend on other lines: the
variable a parser fills, the dict spread into it, the trn_config a from_pretrained gets. The scan
(:mod:`.script_scan`) reads the original tree once and fills a :class:`ScriptFacts`; every rule of
the family that needs such an answer reads it from there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules import hf_fields as hf
from neuron_migrate.rules.calls import UNKNOWN, bind_args, literal
from neuron_migrate.rules.optimum_training.classes import Target
from neuron_migrate.rules.optimum_training.field_reads import FieldPlan


@dataclass
class TrnSizes:
    """What a ``trn_config`` argument says about model parallelism, as code for DistributedConfig."""

    sizes: dict[str, str] = field(default_factory=dict)
    # TrainingNeuronConfig fields set to something other than their default that have no counterpart
    dropped: list[str] = field(default_factory=list)
    # the arguments asked for ZeRO-1 (zero_1=True): FSDP over the data-parallel ranks
    zero_1: bool = False


@dataclass
class Spread:
    """A ``**name`` argument of a legacy arguments class."""

    # the dict's entries (key -> original value) when it is a literal assigned in the file
    entries: dict[str, cst.BaseExpression] | None
    editable: bool = False
    # ``args.to_dict()`` of a legacy arguments variable (``args``), directly or through a variable: after the
    # migration it holds the fields of the stock class only
    arguments: str = ""


@dataclass
class ScriptFacts:
    # variable -> the legacy arguments call it was assigned from (None: from an argument parser)
    args_names: dict[str, cst.Call | None] = field(default_factory=dict)
    # id(training from_pretrained call) -> what its trn_config says (None: cannot be read)
    trn: dict[int, TrnSizes | None] = field(default_factory=dict)
    # lines that only built a trn_config now folded into DistributedConfig
    deletable_lines: set[int] = field(default_factory=set)
    # nodes that disappear with a rewrite and need no marker of their own
    skip_nodes: set[int] = field(default_factory=set)
    # legacy arguments calls whose parallel sizes a from_pretrained in this file took over
    consumed_args: set[int] = field(default_factory=set)
    # id(dict literal) -> the arguments Target whose fields it holds (it is only ever spread into one)
    dict_edits: dict[int, Target] = field(default_factory=dict)
    # id(Name after **) -> what is known about the dict
    spreads: dict[int, Spread] = field(default_factory=dict)
    # ids of the classes listed in an argument parser's dataclass tuple
    parser_elements: set[int] = field(default_factory=set)
    # ids of class bases in ``class X(Base):``
    class_bases: set[int] = field(default_factory=set)
    # variable -> the legacy arguments class it holds (constructed or parsed)
    args_targets: dict[str, Target] = field(default_factory=dict)
    # id(a variable a parse binds, its Name node in ``a, b = parser.parse_...()``) -> the parse
    parse_names: dict[int, Parse] = field(default_factory=dict)
    # what becomes of the fields of the legacy arguments that the stock classes do not have
    fields: FieldPlan = field(default_factory=lambda: FieldPlan())
    # ids of the nodes in the arguments of lazy_load_for_parallelism(...) calls (NM214 rewrites them)
    lazy_args: set[int] = field(default_factory=set)


@dataclass(eq=False)
class Parse:
    """``a, b = parser.parse_...()`` of a parser built from legacy arguments classes."""

    # variable -> its Name node in the assignment and the legacy class it holds (None: another dataclass)
    names: dict[str, tuple[cst.Name, Target | None]] = field(default_factory=dict)


def _returns_remaining(call: cst.Call) -> bool:
    """``return_remaining_strings=True``: the parse returns the unknown arguments after the dataclasses."""
    return any(
        arg.keyword is not None and arg.keyword.value == "return_remaining_strings" and literal(arg.value) is True
        for arg in call.args
    )


def _callee_name(func: cst.BaseExpression) -> str:
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


def _nodes(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    yield node
    for child in node.children:
        yield from _nodes(child)


def literal_entries(value: cst.BaseExpression) -> dict[str, cst.BaseExpression] | None:
    """Key -> value of ``{"a": 1}`` or ``dict(a=1)``; None for anything else."""
    if isinstance(value, cst.Dict):
        entries = {}
        for element in value.elements:
            if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
                return None
            entries[element.key.evaluated_value] = element.value
        return entries
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "dict":
        if any(arg.keyword is None for arg in value.args):
            return None
        return {arg.keyword.value: arg.value for arg in value.args}
    return None


def _trn_config_arg(call: cst.Call) -> cst.Arg | None:
    """The ``trn_config`` argument of a training ``from_pretrained`` (second positional or keyword)."""
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "trn_config":
            return arg
    return positional[1] if len(positional) > 1 else None


def trn_config_sizes(call: cst.Call, literal_only: bool) -> TrnSizes | None:
    """DistributedConfig sizes from a ``TrainingNeuronConfig(...)`` call, or None when not readable."""
    bound = bind_args(call, hf.TRN_CONFIG_ORDER)
    if bound is None:
        return None
    sizes = TrnSizes()
    for name, size in hf.PARALLEL_FIELDS.items():
        arg = bound.get(name)
        if arg is None:
            continue
        value = literal(arg.value)
        if value is UNKNOWN and literal_only:
            return None
        if value is UNKNOWN or (isinstance(value, int) and value > 1):
            sizes.sizes[size] = code_of(arg.value)
    for name, default in hf.TRN_CONFIG_DEFAULTS.items():
        arg = bound.get(name)
        if arg is not None and literal(arg.value) != default:
            sizes.dropped.append(name)
    return sizes
