"""Per-file facts: what several rules want to know about a file, declared once and computed once.

A fact is a module-level :class:`Fact` with a name and a function of the file's context; a rule
asks ``self.ctx.fact(PROCESS_GROUP_PLAN)`` and gets the value, computed on first use and kept for
the rest of the file. This is LibCST's metadata-provider idea without its dependency resolution: our
facts are few and cheap to order by hand, and most are wanted by no rule in a given file, so they
are computed lazily rather than up front.

A fact whose value is a container that rules fill as they go (a registry of the loading calls the
rules handle, the disagreements already reported) is declared with ``Fact(name, lambda ctx: {})``:
one shared, typed, per-file value instead of a string key into a dict of objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Generic, TypeVar

if TYPE_CHECKING:
    from neuron_migrate.ruleapi.context import RuleContext

T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class Fact(Generic[T]):
    """One thing known about a file, computed by ``compute`` from its context the first time it is asked."""

    name: str
    compute: Callable[[RuleContext], T]

    def __repr__(self) -> str:
        return f"Fact({self.name!r})"


class Facts:
    """The facts computed so far for one file."""

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: dict[Fact[Any], Any] = {}

    def get(self, fact: Fact[T], ctx: RuleContext) -> T:
        try:
            return self._values[fact]
        except KeyError:
            value = self._values[fact] = fact.compute(ctx)
            return value
