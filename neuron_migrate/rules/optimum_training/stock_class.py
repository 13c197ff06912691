"""The rules that turn a legacy class into its stock twin (NM201-NM205, NM207, NM208): the twin comes
from the class's rows (``STOCK_TWINS`` in ``rules/tables/optimum_training.py``), the code here does what
a row cannot: the markers a subclass or a ``Class.method(...)`` call needs, the edits of the call's
keyword arguments, and the check of a keyword against the installed release.

A rule that only renames needs none of it: its rows answer every use (NM206).
"""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from neuron_migrate.rules import hf_fields as hf
from neuron_migrate.rules.base import REVIEW, Edit, Fact, Rule
from neuron_migrate.rules.optimum_names import with_methods
from neuron_migrate.rules.optimum_training.classes import Target, target_of
from neuron_migrate.rules.optimum_training.keyword_edits import (
    ArgumentEdits,
    edited_args,
    positional_to_keywords,
    rebuilt,
)
from neuron_migrate.rules.optimum_training.script_scan import script_facts

# (owner, field) pairs whose version-table disagreement with the installed release was reported
REPORTED_DISAGREEMENTS: Fact[set[tuple[str, str]]] = Fact("optimum_training_disagreements", lambda ctx: set())


class StockClassRule(Rule):
    """A rule whose rows rename legacy classes to their stock twins. ``row_methods``: the
    ``Class.method(...)`` calls it renames too. A rule that edits the call defines ``apply_row``."""

    row_methods: ClassVar[tuple[str, ...]] = ()
    # import path of each legacy name -> its twin (derived from the rule's rows)
    twins: ClassVar[dict[str, Target]] = {}

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "rows" not in cls.__dict__:
            return
        cls.twins = {row.name: target_of(row) for row in cls.rows}
        methods = dict.fromkeys(with_methods(tuple(cls.twins), *cls.row_methods), "method_call")
        cls.calls = {**cls.calls, **methods}

    def method_call(self, original, updated, qname: str):
        owner, method = qname.rsplit(".", 1)
        target = self.twins[owner]
        message = f"{owner.rsplit('.', 1)[1]}.{method} -> {self.module_of(target)}.{target.name}.{method}"
        stock = self.ctx.expr(self.stock_name(target))
        return Edit(updated.with_changes(func=updated.func.with_changes(value=stock)), message=message)

    def stock_name(self, target: Target) -> str:
        return self.ctx.require_from_import(target.module, target.name)

    def rename_reference(self, original, updated, qname: str):
        target = self.twins[qname]
        name = self.stock_name(target)
        review = self.subclass_review(target) if id(original) in script_facts(self.ctx).class_bases else ""
        message = f"{qname.rsplit('.', 1)[1]} -> {self.module_of(target)}.{target.name}"
        return Edit(self.ctx.expr(name), message=message, review=review)

    def subclass_review(self, target: Target) -> str:
        """What to check in a subclass: it may override methods the stock class does not have."""
        return ""

    def module_of(self, target: Target) -> str:
        return target.module

    def finish(self, legacy: str, target: Target, edits: ArgumentEdits, node: cst.CSTNode, replacement) -> Edit:
        return self.report_edits(f"{legacy} -> {self.module_of(target)}.{target.name}", edits, node, replacement)

    def report_edits(self, headline: str, edits: ArgumentEdits, node: cst.CSTNode, replacement) -> Edit:
        """TODOs for what is left to do, and the edit: its note for the report, one review marker for the rest."""
        for message in edits.manuals:
            self.ctx.manual(self.meta, node, message)
        message = "; ".join([headline, *edits.notes])
        if edits.reviews:
            return Edit(replacement, message=message, review="; ".join(edits.reviews))
        return Edit(replacement, message=message, safe=self.meta.safety == REVIEW)

    def accepts(self, node: cst.CSTNode, owner: str, name: str, table_owner: str = "") -> bool:
        """Whether the target release of ``owner`` takes ``name``: the installed source when there is
        one (an info finding says when the version table disagrees), else the version table."""
        table = hf.table_says(table_owner or owner, name)
        real = hf.installed_fields(owner)
        if real is None:
            return True if table is None else table
        present = name in real
        if table is not None and table != present:
            seen = self.ctx.fact(REPORTED_DISAGREEMENTS)
            if (owner, name) not in seen:
                seen.add((owner, name))
                package = hf.OWNER_PACKAGE.get(owner, "transformers")
                verb = "has" if present else "has no"
                self.ctx.report(
                    self.meta,
                    node,
                    f"the version table disagrees with the installed {hf.version_text(package)}, whose {owner} "
                    f"{verb} `{name}`; following the installed release",
                )
        return present


class TrainerRule(StockClassRule):
    """NeuronTrainer-like classes: rename, ``tokenizer=`` -> ``processing_class=``."""

    def apply_row(self, original, updated, qname: str):
        if isinstance(original, cst.Call):
            return self.rename_call(original, updated, qname)
        return self.rename_reference(original, updated, qname)

    def rename_call(self, original: cst.Call, updated: cst.Call, qname: str):
        target = self.twins[qname]
        legacy = qname.rsplit(".", 1)[1]
        call = positional_to_keywords(updated, target)
        if call is None:
            self.ctx.manual(
                self.meta, original, f"pass the arguments after the {target.keep}th by keyword, then run again"
            )
            return updated
        edits = ArgumentEdits()
        self.processing_class(original, call, edits)
        func = self.ctx.expr(self.stock_name(target))
        renamed = rebuilt(call.with_changes(func=func), edited_args(call.args, edits))
        return self.finish(legacy, target, edits, original, renamed)

    def processing_class(self, node: cst.Call, call: cst.Call, edits: ArgumentEdits) -> None:
        keywords = {arg.keyword.value for arg in call.args if arg.keyword}
        if "tokenizer" not in keywords:
            return
        self.accepts(node, "Trainer", "tokenizer")
        if not self.accepts(node, "Trainer", "processing_class"):
            return
        if "processing_class" in keywords:
            # The legacy trainer let tokenizer= win over processing_class=.
            edits.drop.add("processing_class")
        edits.rename["tokenizer"] = "processing_class"
        edits.notes.append("tokenizer= passed as processing_class=")

    def subclass_review(self, target: Target) -> str:
        return f"check the methods this subclass overrides against {target.module}.{target.name}"
