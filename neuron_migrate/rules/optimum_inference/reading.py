"""Reading a legacy loading call: its positional arguments and its keywords by name, a ``**settings``
spread of a literal dict read as if its keys were written in the call. Shared by every loader rule of
this family and of optimum_diffusers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.calls import keyword_arg, literal


@dataclass
class Keyword:
    """One keyword argument of a legacy call, written in the call or found in a literal dict spread."""

    name: str
    value: cst.BaseExpression
    source: str = ""  # name of the dict it came from ("" = written in the call)

    @property
    def code(self) -> str:
        return code_of(self.value).strip()

    def literal(self):
        return literal(self.value, single_token=True)


@dataclass
class Reading:
    """A legacy call's arguments: the plain positionals and the keywords by name."""

    positional: list[int]  # indexes of plain positional arguments
    keywords: dict[str, Keyword]
    spreads: dict[int, str] = field(default_factory=dict)  # index of `**name` read from a literal dict -> name
    unresolved: list[int] = field(default_factory=list)  # indexes of `**expr` that could not be read

    def rebuilt(self, updated: cst.Call, rename: Callable[[Keyword], str | None]) -> list[cst.Arg]:
        """``updated``'s arguments with each keyword kept under the name ``rename`` gives it (None =
        dropped); a literal dict spread becomes the keywords of its keys that are kept."""
        out: list[cst.Arg] = []
        for position, arg in enumerate(updated.args):
            if position in self.positional or position in self.unresolved:
                out.append(arg)
            elif position in self.spreads:
                for keyword in self.keywords.values():
                    name = rename(keyword) if keyword.source == self.spreads[position] else None
                    if name:
                        out.append(keyword_arg(cst.Arg(value=keyword.value), name))
            elif arg.keyword is not None:
                keyword = self.keywords[arg.keyword.value]
                name = rename(keyword) if not keyword.source else None
                if name:
                    out.append(keyword_arg(arg, name))
        return out


def returns_tensors(node: cst.BaseExpression | None) -> bool:
    """``tokenizer(..., return_tensors="pt")`` and the like: a CPU tensor or BatchEncoding."""
    if not isinstance(node, cst.Call):
        return False
    return any(
        arg.keyword is not None and arg.keyword.value == "return_tensors" and literal(arg.value) == "pt"
        for arg in node.args
    )


def dict_literal(node: cst.BaseExpression) -> dict[str, cst.BaseExpression] | None:
    """The keys and values of ``{"a": 1}`` or ``dict(a=1)`` when every key is a plain name."""
    pairs: dict[str, cst.BaseExpression] = {}
    if isinstance(node, cst.Dict):
        for element in node.elements:
            key = literal(element.key, single_token=True) if isinstance(element, cst.DictElement) else None
            if not (isinstance(key, str) and key.isidentifier()):
                return None
            pairs[key] = element.value
        return pairs
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "dict":
        for arg in node.args:
            if arg.keyword is None or arg.star:
                return None
            pairs[arg.keyword.value] = arg.value
        return pairs
    return None


def read_call(call: cst.Call, spread: Callable[[cst.BaseExpression], tuple[str, dict] | None]) -> Reading | None:
    """Read ``call``; ``spread`` resolves a ``**expr`` to (dict name, its pairs) when it is a literal
    dict. None for ``*args``, which cannot be read."""
    reading = Reading(positional=[], keywords={})
    from_dicts: dict[str, Keyword] = {}
    for position, arg in enumerate(call.args):
        if arg.star == "*":
            return None
        if arg.star == "**":
            found = spread(arg.value)
            if found is None:
                reading.unresolved.append(position)
                continue
            name, pairs = found
            reading.spreads[position] = name
            for key, value in pairs.items():
                from_dicts.setdefault(key, Keyword(key, value, source=name))
        elif arg.keyword is None:
            reading.positional.append(position)
        else:
            reading.keywords[arg.keyword.value] = Keyword(arg.keyword.value, arg.value)
    for key, keyword in from_dicts.items():
        # Python would reject a key given twice; the written keyword is the one that reads clearly.
        reading.keywords.setdefault(key, keyword)
    return reading
