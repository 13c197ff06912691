"""The base of the rules that migrate calls loading a Neuron model or pipeline (this family's loaders and
optimum_diffusers'): how each registers its loading calls for the file's loader index, the statements a
migrated load adds around its line, the assignments it deletes, and where a class name stands (a base
class, an annotation, an isinstance check) for the rules that rename it.
"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import FileContext
from neuron_migrate.rules.base import Edit, Rule, StatementReplacement
from neuron_migrate.rules.optimum_inference.loader_index import LOADER_INDEX, LOADER_REGISTRY, Load, LoaderIndex
from neuron_migrate.rules.optimum_inference.reading import Reading

BASE, ANNOTATION, ISINSTANCE, OTHER = "base", "annotation", "isinstance", "other"


class NeuronLoaderRule(Rule):
    """Shared by the rules that migrate calls loading a Neuron model or pipeline.

    Each active rule lists its loading calls in ``loads`` (qname -> handler name); the file's
    :class:`LoaderIndex` reads them all once. The class also tracks where a class name stands
    (a base class, an annotation, an isinstance check) for the reference handlers.
    """

    loads: dict[str, str] = {}
    max_positional = 1
    # Keywords that make a loading call a manual site.
    manual_keywords: frozenset[str] = frozenset()

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.contexts: dict[int, str] = {}
        self.annotation_depth = 0
        # id(original line) -> (statements to add before it, after it, what they do): set by a call handler,
        # added when the line is left so that the line keeps every other rule's edits.
        self.follow_ups: dict[int, tuple[str, str, str]] = {}

    def visit_Module(self, node: cst.Module) -> None:
        registry = self.ctx.fact(LOADER_REGISTRY)
        for qname in self.loads:
            # An imported name's qualified name starts with a module the file spells out: a file that
            # never names the package has no such load, and no loader index to build.
            if qname.split(".")[0] in self.ctx.text:
                registry.setdefault(qname, self)

    def index(self) -> LoaderIndex:
        return self.ctx.fact(LOADER_INDEX)

    def load_of(self, original: cst.Call) -> Load:
        return self.index().loads[id(original)]

    def migrates(self, reading: Reading) -> bool:
        return len(reading.positional) <= self.max_positional and not (set(reading.keywords) & self.manual_keywords)

    def link(self, load: Load, index: LoaderIndex) -> None:
        """Called once every loading call of the file is read: a rule whose loads take settings from
        another call (an export from its get_neuron_config) connects them here."""

    def follow_with(self, load: Load, statement: str, why: str, *, before: str = "") -> None:
        """Add ``statement`` after the line ``load`` is the value of (and ``before`` ahead of it)."""
        self.follow_ups[id(load.line)] = (before, statement, why)

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        """Add the statements a migrated load needs around its line, or delete an assignment whose
        value only fed migrated loading calls (a literal dict they now spell out, a neuron config)."""
        if id(original) in self.follow_ups:
            before, after, why = self.follow_ups.pop(id(original))
            # The engine gives the first statement the line's own comments and the last its trailing one.
            line = updated.with_changes(leading_lines=[], trailing_whitespace=cst.TrailingWhitespace())
            statements = [*self.ctx.statements(before), line, *self.ctx.statements(after)]
            return Edit(StatementReplacement(statements), message=why, safe=True)
        if not self.ctx.fact(LOADER_REGISTRY):
            return updated
        owner = self.index().deleted_lines.get(id(original))
        if owner is None or owner[0] is not self:
            return updated
        return Edit(StatementReplacement([]), message=owner[1], safe=True)

    def spread_note(self, reading: Reading) -> str:
        kept = sorted(set(reading.spreads.values()) & self.index().kept_dicts)
        if not kept:
            return ""
        names = ", ".join(f"`{name}`" for name in kept)
        return f"; {names} is still read elsewhere: its keys are no longer passed here"

    # Reference contexts:
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        for base in node.bases:
            self.contexts[id(base.value)] = BASE

    def visit_Annotation(self, node: cst.Annotation) -> None:
        self.annotation_depth += 1

    def leave_Annotation(self, original: cst.Annotation, updated: cst.Annotation) -> cst.Annotation:
        self.annotation_depth -= 1
        return updated

    def visit_Call(self, node: cst.Call) -> None:
        if not (isinstance(node.func, cst.Name) and node.func.value in ("isinstance", "issubclass")):
            return
        if len(node.args) == 2:
            classes = node.args[1].value
            self.contexts[id(classes)] = ISINSTANCE
            if isinstance(classes, cst.Tuple):
                self.contexts.update((id(element.value), ISINSTANCE) for element in classes.elements)

    def context_of(self, node: cst.CSTNode) -> str:
        if self.annotation_depth:
            return ANNOTATION
        return self.contexts.get(id(node), OTHER)

    def transformers_name(self, name: str) -> cst.BaseExpression:
        return self.ctx.expr(self.ctx.require_from_import("transformers", name))

    def rename_class(self, original, updated, legacy: str, module: str, target: str, load: str):
        """A class name with a same-shaped stock replacement: renamed in annotations and isinstance
        checks, renamed and reviewed as a base class; any other use (a variable that is later
        loaded with Neuron arguments) is left to a human, told to ``load`` instead."""
        context = self.context_of(original)
        if context == OTHER:
            self.ctx.manual(
                self.meta, original, f"use `{target}` and load with `{load}`, without the Neuron export arguments"
            )
            return updated
        stock = self.ctx.expr(self.ctx.require_from_import(module, target))
        if context == BASE:
            review = f"{legacy} was a compiled Neuron class; check the overridden methods still apply"
            return Edit(stock, message=f"{legacy} -> {target}", review=review)
        return Edit(stock, message=f"{legacy} -> {target}", safe=True)
