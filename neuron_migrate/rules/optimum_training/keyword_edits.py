"""Keyword arguments edited in place: the edits planned for one call (or one dict literal of keyword
arguments) and the code that applies them, keeping the call's own layout and comments. Shared by every
rule that rewrites the call of a legacy class to its stock twin (NM201-NM207).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import libcst as cst

from neuron_migrate.rules.calls import keyword_arg, new_keyword, with_elements
from neuron_migrate.rules.optimum_training.classes import Target
from neuron_migrate.rules.xla_step.common import with_args


@dataclass
class ArgumentEdits:
    """Keyword edits computed for one call (or one dict literal of keyword arguments)."""

    drop: set[str] = field(default_factory=set)
    rename: dict[str, str] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)
    add: list[tuple[str, str]] = field(default_factory=list)
    # model_init_kwargs entries to add (name -> code) when that argument is a literal
    init_kwargs: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    reviews: list[str] = field(default_factory=list)
    manuals: list[str] = field(default_factory=list)
    # a from_pretrained in this file already took the parallel sizes over
    consumed: bool = False


def edited_args(args: Iterable[cst.Arg], edits: ArgumentEdits) -> list[cst.Arg]:
    out: list[cst.Arg] = []
    for arg in args:
        name = arg.keyword.value if arg.keyword else None
        if name in edits.drop:
            continue  # with_args moves the comment lines above it to the next argument
        if name in edits.values:
            arg = arg.with_changes(value=cst.parse_expression(edits.values[name]))
        if name == "model_init_kwargs" and edits.init_kwargs:
            arg = arg.with_changes(value=_with_entries(arg.value, edits.init_kwargs))
        if name in edits.rename:
            arg = arg.with_changes(keyword=cst.Name(edits.rename[name]))
        out.append(arg)
    out.extend(new_keyword(name, value) for name, value in edits.add)
    return out


def _with_entries(value: cst.BaseExpression, entries: dict[str, str]) -> cst.BaseExpression:
    """``{"a": 1}`` / ``dict(a=1)`` with more entries (the caller checked it is one of those)."""
    if isinstance(value, cst.Call):
        return with_args(value, [*value.args, *(new_keyword(k, v) for k, v in entries.items())])
    added = [cst.DictElement(cst.SimpleString(f'"{k}"'), cst.parse_expression(v)) for k, v in entries.items()]
    return with_elements(value, [*value.elements, *added])


def edited_dict(node: cst.Dict, edits: ArgumentEdits) -> cst.Dict:
    elements: list[cst.DictElement] = []
    for element in node.elements:
        key = element.key.evaluated_value  # only literal dicts are edited (see literal_entries)
        if key in edits.drop:
            continue  # with_elements moves the comment lines above it to the next entry
        if key in edits.values:
            element = element.with_changes(value=cst.parse_expression(edits.values[key]))
        if key == "model_init_kwargs" and edits.init_kwargs:
            element = element.with_changes(value=_with_entries(element.value, edits.init_kwargs))
        if key in edits.rename:
            quote = element.key.quote
            element = element.with_changes(key=cst.SimpleString(f"{quote}{edits.rename[key]}{quote}"))
        elements.append(element)
    elements += [cst.DictElement(cst.SimpleString(f'"{k}"'), cst.parse_expression(v)) for k, v in edits.add]
    return with_elements(node, elements)


def rebuilt(call: cst.Call, args: list[cst.Arg]) -> cst.Call:
    """``call`` with ``args`` in its layout; with none left, plain ``f()``."""
    if not args:
        return call.with_changes(args=[], whitespace_before_args=cst.SimpleWhitespace(""))
    return with_args(call, args)


def positional_to_keywords(call: cst.Call, target: Target) -> cst.Call | None:
    """Positional arguments past ``target.keep`` passed by keyword, named by the legacy signature;
    None when there are such arguments but the legacy signature is not known."""
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    if len(positional) <= target.keep:
        return call
    if len(positional) > len(target.legacy_params) or any(arg.star == "*" for arg in call.args):
        return None
    args, position = [], 0
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            if position >= target.keep:
                arg = keyword_arg(arg, target.legacy_params[position])
            position += 1
        args.append(arg)
    return call.with_changes(args=args)
