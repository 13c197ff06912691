"""Parse -> one pass of the rules -> imports -> re-parse check.

The engine knows no legacy API by name. It resolves qualified names once per node, hands each
node to the rules that asked for it, and keeps the promises every rule relies on: suppression
comments, markers attached to the right statement, nothing left behind unreported, imports added
once and removed when they became unused, and output that parses or is not produced at all.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper

from neuron_migrate import markers
from neuron_migrate.migrate import dual_stack
from neuron_migrate.migrate import imports as import_edits
from neuron_migrate.migrate.guards import is_shim, only_tests
from neuron_migrate.migrate.names import new_unbound_reads
from neuron_migrate.migrate.context import FileContext, code_of, is_import_line, root_name, site_todo_rule
from neuron_migrate.migrate.errors import InternalError
from neuron_migrate.report.model import MANUAL, Finding, Span
from neuron_migrate.ruleapi import (
    Edit,
    Rule,
    RuleIndex,
    RuleMeta,
    StatementReplacement,
    rule_with_role,
    rules_for,
    select_rules,
)

_STATEMENTS = (cst.SimpleStatementLine, cst.BaseCompoundStatement)
# small statements whose value may be a call that a rule replaces as a whole statement
_CALL_STATEMENTS = (cst.Expr, cst.Assign, cst.AnnAssign, cst.Return)

# What the traversal does with a node depends on its type only, so each type's part is worked out
# once (LibCST's node bases are ABCs, whose isinstance checks cost more than the rest of a visit).
_STATEMENT, _LINE, _SUITE, _IMPORT, _FSTRING, _CALL, _ATTRIBUTE, _NAME, _GUARD, _LINE_END, _BLOCK = (
    1 << bit for bit in range(11)
)
_KIND_BASES = (
    (_STATEMENT, _STATEMENTS),
    (_LINE, cst.SimpleStatementLine),
    (_SUITE, cst.SimpleStatementSuite),
    (_IMPORT, (cst.Import, cst.ImportFrom)),
    (_FSTRING, cst.FormattedString),
    (_CALL, cst.Call),
    (_ATTRIBUTE, cst.Attribute),
    (_NAME, cst.Name),
    # the statements a compatibility shim can be (see _is_shim)
    (_GUARD, (cst.Try, cst.If)),
    (_LINE_END, cst.TrailingWhitespace),
    (_BLOCK, (cst.IndentedBlock, cst.Module)),
)
_KINDS: dict[type, int] = {}


def _kind_of(node_type: type) -> int:
    kind = _KINDS.get(node_type)
    if kind is None:
        kind = _KINDS[node_type] = sum(flag for flag, bases in _KIND_BASES if issubclass(node_type, bases))
    return kind


class _HookNames(dict):
    """Node type -> the name of its ``visit_``/``leave_`` hook, spelled once per type."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def __missing__(self, node_type: type) -> str:
        name = self[node_type] = self.prefix + node_type.__name__
        return name


_VISIT_HOOK = _HookNames("visit_")
_LEAVE_HOOK = _HookNames("leave_")


@dataclass
class PythonResult:
    source: str
    code: str
    findings: list[Finding] = field(default_factory=list)
    # the parsed source printed back unchanged: differs from ``source`` only where LibCST cannot reproduce it
    reproduced: str = ""

    @property
    def changed(self) -> bool:
        return self.code != self.source


@dataclass
class LegacyRef:
    node: cst.CSTNode
    qname: str
    statement: cst.CSTNode


@dataclass(frozen=True)
class RulePlan:
    """The selected rules, indexed for dispatch, plus the engine-level safety nets."""

    index: RuleIndex
    legacy_prefixes: tuple[str, ...]
    leftover: type[Rule] | None = None
    shim: type[Rule] | None = None
    unused_import: type[Rule] | None = None
    # ids of the rules whose stale TODO markers a rerun drops (see _without_stale_markers)
    droppable_todos: frozenset[str] = frozenset()
    # qualified names that a rule left out of this run (--ignore, --select) would handle: their uses get no
    # NM100 "no equivalent known" marker, since one is known and was turned off
    deselected_names: frozenset[str] = frozenset()
    # Dual-stack code (``try: import torch_xla``, ``if is_torch_xla_available():``) keeps its XLA branch and
    # gains a neuron one; by default the XLA branch is migrated to the neuron device in place.
    keep_dual_stack: bool = False
    # --from cuda: the rules whose source is "cuda" run too (--select / --ignore pick among them as among the rest)
    from_cuda: bool = False
    # imports the selected rules make obsolete (a rule's ``retired_imports``): dropped once nothing reads them
    retired_imports: tuple[str, ...] = ()

    @classmethod
    def build(cls, select=(), ignore=(), *, keep_dual_stack: bool = False, from_cuda: bool = False) -> RulePlan:
        sources = ("legacy", "cuda") if from_cuda else ("legacy",)
        chosen = [rule for rule in select_rules(select, ignore) if rule.source in sources]
        by_id = {rule.meta.id: rule for rule in chosen}
        left_out = [rule for rule in rules_for("python") if rule.meta.id not in by_id and rule.source in sources]
        # the legacy modules are known even when the rule that reports their leftovers is not selected
        leftover = rule_with_role("leftover")
        return cls(
            index=RuleIndex.build(chosen),
            legacy_prefixes=leftover.legacy_modules if leftover is not None else (),
            leftover=rule_with_role("leftover", chosen),
            shim=rule_with_role("shim", chosen),
            unused_import=rule_with_role("unused-import", chosen),
            droppable_todos=frozenset(rule.meta.id for rule in rules_for("python", chosen) if not rule.follow_up_todos),
            deselected_names=frozenset(name for rule in left_out for name in (*rule.calls, *rule.references)),
            keep_dual_stack=keep_dual_stack,
            from_cuda=from_cuda,
            retired_imports=tuple(name for rule in chosen for name in rule.retired_imports),
        )

    @property
    def guards_kept(self) -> bool:
        """Are dual-stack guards (``try: import torch_xla``, ``if is_torch_xla_available():``) kept as they
        are? With --keep-dual-stack, or when the rule that migrates them is not selected."""
        return self.keep_dual_stack or self.shim is None

    @property
    def retired_names(self) -> tuple[str, ...]:
        """What an import that nothing reads any more is removed for: the legacy modules, and the legacy
        stack's availability checks once migrated (``from transformers.utils import is_torch_xla_available``)."""
        if self.guards_kept:
            return (*self.legacy_prefixes, *self.retired_imports)
        return (*self.legacy_prefixes, *self.retired_imports, *self.shim.calls)

    @property
    def guard_names(self) -> tuple[str, ...]:
        """The availability checks whose ``if`` is a dual-stack guard, by their short names."""
        return self.shim.guard_names if self.shim is not None else ()

    def triggers(self) -> tuple[bytes, ...]:
        # A file whose legacy code was all edited away by hand may still hold TODO markers to drop.
        return (*self.index.triggers(), TODO_MARKER_TRIGGER)

    @property
    def roots(self) -> frozenset[str]:
        """Top-level modules named by any rule table or legacy prefix: only names imported from
        these are ever resolved, which keeps the cost of qualified names low."""
        named = [prefix for by_prefix in self.index.named.values() for prefix in by_prefix]
        names = [*self.index.calls, *self.index.references, *named, *self.legacy_prefixes]
        return frozenset(n.split(".")[0] for n in names)


TODO_MARKER_TRIGGER = b"TODO(neuron-migrate NM"


class MigrationTransformer(cst.CSTTransformer):
    def __init__(self, ctx: FileContext, plan: RulePlan) -> None:
        super().__init__()
        self.ctx = ctx
        self.index = plan.index
        self.instances: dict[type[Rule], Rule] = {rule: rule(ctx) for rule in plan.index.rules}
        self.legacy_prefixes = plan.legacy_prefixes
        self.leftover_rule = plan.leftover
        self.shim_rule = plan.shim
        self.guards_kept = plan.guards_kept
        self.guard_names = plan.guard_names
        # the ``try:`` guards of legacy imports, in document order: the import pass says what became of each
        self.guard_trys: list[cst.Try] = []
        self.roots = plan.roots
        self.droppable_todos = plan.droppable_todos
        self.deselected_names = plan.deselected_names
        self.metas = {rule.meta.id: rule.meta for rule in plan.index.rules}
        self.call_funcs: set[int] = set()
        self.inner_attrs: set[int] = set()
        self.import_depth = 0
        self.legacy_refs: list[LegacyRef] = []
        self.handled_spans: list[Span] = []
        # id(statement being visited) -> how many spans were handled before it: only spans handled
        # since can hold a use in it (what was left earlier lies before it in the file)
        self.handled_before: dict[int, int] = {}
        self.shims: list[cst.CSTNode] = []
        # --keep-dual-stack: legacy branches of guards already paired with a neuron one (nothing to say there)
        self.quiet_shims: set[int] = set()
        # --keep-dual-stack: guards whose branch is being migrated into its neuron copy, with what to undo
        # (findings, import requests) if the copy turns out empty
        self.pairing: list[tuple[cst.CSTNode, int, int]] = []
        self.pairs_guards = plan.keep_dual_stack and plan.shim is not None
        # id(original line) -> statements that replace it (empty = delete)
        self.pending_statements: dict[int, list[cst.BaseStatement]] = {}
        # id(updated line) -> its comment lines, for lines deleted at the block level
        self.deleted_lines: dict[int, list[cst.EmptyLine]] = {}
        # id(one-line suite, or line of several statements) -> (index, stand-in line) per call statement
        self.stand_ins: dict[int, list[tuple[int, cst.SimpleStatementLine]]] = {}
        # quote characters of the f-strings around the current node, innermost last
        self.fstring_quotes: list[str] = []
        self.import_statements: list[cst.CSTNode] = []
        self.shim_uses: set[int] = set()
        # line -> its end in the rewritten tree, kept while a statement holds an unreported legacy use
        self.line_ends: dict[int, cst.TrailingWhitespace] = {}
        # the file's first statement, whose markers on a rerun sit in the module header
        self.first_statement = ctx.module.body[0] if ctx.module.body else None
        self.first_markers: list[str] = []

    # ----- traversal ---------------------------------------------------------------------------
    # LibCST asks a transformer about every field of every node (``visit_<Node>_<field>`` hooks); the
    # engine has none, and answering no straight away saves a tenth of a large file's time.
    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        return None

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        return None

    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = _kind_of(type(node))
        if kind & _STATEMENT:
            self.ctx.statement_stack.append(node)
            self.handled_before[id(node)] = len(self.handled_spans)
            if kind & _LINE:
                self._note_statement_calls(node)
        elif kind & _SUITE:
            self._note_statement_calls(node)
        if kind & _IMPORT:
            self.import_depth += 1
            if not self.shims:
                self.import_statements.append(self.ctx.statement_stack[-1])
        elif kind & _FSTRING:
            self.fstring_quotes.append(node.start[-1])
        elif kind & _CALL:
            self.call_funcs.add(id(node.func))
        elif kind & _ATTRIBUTE:
            self.inner_attrs.add(id(node.value))
            self._note_legacy(node)
        elif kind & _NAME:
            self._note_legacy(node)
        if kind & _GUARD:
            self._enter_guard(node)
        hook = _VISIT_HOOK[type(node)]
        for rule in self.index.hooks.get(hook, ()):
            getattr(self.instances[rule], hook)(node)
        return True

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        kind = _kind_of(type(original))
        if kind & _LINE_END:
            return self._leave_line_end(original, updated)
        result = updated
        if kind & _CALL:
            result = self._dispatch(original, result, self.index.calls, original.func)
        elif kind & (_ATTRIBUTE | _NAME) and id(original) not in self.call_funcs:
            if self.import_depth == 0 and id(original) not in self.inner_attrs:
                result = self._dispatch(original, result, self.index.references, original)
        hook = _LEAVE_HOOK[type(original)]
        for rule in self._hook_rules(hook, original):
            if not isinstance(result, cst.CSTNode) or type(result) is not type(original):
                break
            result = self._apply(rule, hook, original, result)
        if kind & _IMPORT:
            self.import_depth -= 1
        elif kind & _FSTRING:
            self.fstring_quotes.pop()
        if self.shims and self.shims[-1] is original:
            self.shims.pop()
        if self.pairing and self.pairing[-1][0] is original:
            result = self._pair(original, result)
        if kind & _STATEMENT:
            result = self._finish_statement(original, result)
            self.ctx.statement_stack.pop()
        elif kind & _SUITE and id(original) in self.stand_ins:
            result = self._replace_in_suite(original, result)
        elif kind & _BLOCK:
            result = self._drop_deleted_lines(result)
            if isinstance(result, cst.Module) and not self.ctx.no_comments:
                result = self._without_header_repeats(result)
        return result

    def _leave_line_end(self, original: cst.TrailingWhitespace, updated: cst.TrailingWhitespace):
        """Uses on a line are left before the line's end, so a rule's tag is known here; leftovers are
        only reported with their statement, so the line ends of a statement holding one are kept."""
        if not self.ctx.line_tags and not self.legacy_refs:
            return updated
        line = self.ctx.span(original).line
        result = _tagged(updated, self.ctx.line_tags.pop(line, None))
        if self.legacy_refs:
            self.line_ends[line] = result
        return result

    def _tag_late_lines(self, original, result):
        """Tags that leftovers reported with the statement ask for, on the line ends kept for them."""
        lines = range(self.ctx.first_line(original), self.ctx.span(original).end_line + 1)
        placed = [n for n in lines if n in self.ctx.line_tags and n in self.line_ends]
        targets = {id(self.line_ends[n]): self.ctx.line_tags.pop(n) for n in placed}
        for n in lines:
            self.line_ends.pop(n, None)
        if not targets or not isinstance(result, cst.CSTNode):
            return result
        return result.visit(_LineEndTags(targets))

    def _note_statement_calls(self, node: cst.SimpleStatementLine | cst.SimpleStatementSuite) -> None:
        """Map each call that is a whole small statement to the line it stands in. A statement that
        shares its line (``a(); f()``) or is the body of a one-line ``if x: f()`` gets a stand-in line
        of its own, so rules see the same shape as on a line by itself; in a one-line suite every
        statement gets one, and the rules' line hooks see it as a line."""
        in_suite = isinstance(node, cst.SimpleStatementSuite)
        alone = not in_suite and len(node.body) == 1
        for index, small in enumerate(node.body):
            value = getattr(small, "value", None)
            is_call = isinstance(small, _CALL_STATEMENTS) and isinstance(value, cst.Call)
            if alone and is_call:
                self.ctx.statement_for_call[id(value)] = node
            if alone or not (is_call or in_suite):
                continue
            stand_in = cst.SimpleStatementLine(body=[small.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)])
            self.ctx.stand_ins[id(stand_in)] = small
            if is_call:
                self.ctx.statement_for_call[id(value)] = stand_in
            self.stand_ins.setdefault(id(node), []).append((index, stand_in))
            if in_suite:
                for rule in self.index.hooks.get("visit_SimpleStatementLine", ()):
                    self.instances[rule].visit_SimpleStatementLine(stand_in)

    # ----- dispatch ----------------------------------------------------------------------------
    def _hook_rules(self, hook: str, original: cst.CSTNode):
        """The rules whose ``hook`` sees ``original``: those hooking every node of its type, and for a
        call, attribute or name outside an import, those whose prefixes name it (a call by its callee)."""
        rules = self.index.hooks.get(hook, ())
        if hook not in self.index.named or self.import_depth:
            return rules
        named = self.index.named_rules(hook, self.ctx.qualified_names(_named_part(original)))
        if not named:
            return rules
        return sorted({*rules, *named}, key=self.index.order.__getitem__)

    def _dispatch(self, original, updated, table, name_node):
        if not table:
            return updated
        for qname in sorted(self.ctx.qualified_names(name_node)):
            for rule, method in table.get(qname, ()):
                result = self._apply(rule, method, original, updated, qname)
                if result is not updated:
                    return result
        return updated

    def _apply(self, rule: type[Rule], method: str, original, updated, *args):
        meta = rule.meta
        if self.shims:
            return updated
        ctx = self.ctx
        before = len(ctx.findings)
        imports_before = len(ctx.imports_needed)
        ctx.begin()
        try:
            result = getattr(self.instances[rule], method)(original, updated, *args)
            if isinstance(result, Edit):
                result = ctx.take(result)
            if result is updated and len(ctx.findings) == before and not ctx.answered_elsewhere:
                return updated  # the rule had nothing to say about this node: the common case
            if isinstance(result, StatementReplacement):
                result = self._schedule_statement(meta, original, updated, result)
            changed = result is not updated
            if changed and self.fstring_quotes and not isinstance(result, _Scheduled):
                result = self._fit_into_fstring(meta, original, updated, result)
                changed = result is not updated
            if changed and self.ctx.is_suppressed(meta.id, original):
                # The edit is not made, so neither are the imports it asked for (the newest keys).
                for key in list(self.ctx.imports_needed)[imports_before:]:
                    del self.ctx.imports_needed[key]
                self.ctx.record_suppressed(meta, original)
                self.handled_spans.append(self.ctx.span(original))
                return updated
            if changed:
                after = result.after if isinstance(result, _Scheduled) else _code_of_result(result)
                self.ctx.finish_edit(meta, original, after)
                if isinstance(result, _Scheduled):
                    self.pending_statements[id(result.line)] = result.statements
                    result = updated
            if changed or len(self.ctx.findings) != before or self.ctx.answered_elsewhere:
                self.handled_spans.append(self.ctx.span(_answered_for(original)))
            return result
        finally:
            self.ctx.end()

    def _fit_into_fstring(self, meta: RuleMeta, original, updated, result):
        """Before Python 3.12 an f-string's expressions cannot reuse its quote character: re-quote
        the replacement's strings, or leave the site to a human when that is not possible."""
        enclosing = self.fstring_quotes[:-1] if isinstance(original, cst.FormattedString) else self.fstring_quotes
        if not enclosing or not isinstance(result, cst.BaseExpression):
            return result
        banned = set(enclosing)
        result = result.visit(_Requote(banned))
        text = code_of(result)
        if not banned.intersection(text) and "\\" not in text:
            return result
        self.ctx.manual(
            meta, original, "sits inside an f-string whose quotes the replacement needs; rewrite it by hand"
        )
        return updated

    def _schedule_statement(self, meta: RuleMeta, original, updated, replacement: StatementReplacement):
        if isinstance(original, cst.SimpleStatementLine):
            # A hook on the line itself replaces that line; it has checked what the line binds.
            line, deletes_value = original, False
        else:
            line = self.ctx.statement_for_call.get(id(original))
            # Deleting "x = f()" would leave x undefined, so only bare expression lines may vanish.
            deletes_value = not replacement.statements and line is not None and not isinstance(line.body[0], cst.Expr)
        if line is None or id(line) in self.pending_statements or deletes_value:
            message = "used inside an expression, so it cannot be rewritten automatically"
            if replacement.fallback:
                message += f"; {replacement.fallback}"
            self.ctx.manual(meta, original, message)
            return updated
        after = "".join(code_of(s) for s in replacement.statements)
        return _Scheduled(line, replacement.statements, after)

    # ----- statements: markers and leftovers ---------------------------------------------------
    def _finish_statement(self, original, result):
        if self.ctx.import_sites and isinstance(result, cst.BaseCompoundStatement):
            result = self._add_lazy_imports(original, result)
        # Leftovers first: their markers are among those this run writes for the statement.
        self._report_leftovers(original)
        if not self.ctx.no_comments and isinstance(result, _STATEMENTS):
            result = self._without_stale_markers(original, result, self.ctx.markers.get(id(original), ()))
        if _emptied_branch(original, result):
            # ``if HAS_XLA: xm.mark_step()`` with the call gone: the test alone does nothing
            self.deleted_lines[id(result)] = list(result.leading_lines)
        replacement = self.pending_statements.pop(id(original), None)
        if replacement is not None:
            result = self._replace_line(result, replacement)
        elif id(original) in self.stand_ins and isinstance(result, cst.SimpleStatementLine):
            result = self._replace_in_line(original, result)
        if self.ctx.line_tags and self.line_ends:
            result = self._tag_late_lines(original, result)
        comments = self.ctx.markers.pop(id(original), None)
        if original is self.first_statement:
            self.first_markers = comments or []
        if not comments:
            return result
        if id(result) in self.deleted_lines:
            self.deleted_lines[id(result)].extend(cst.EmptyLine(comment=cst.Comment(c)) for c in comments)
            return result
        if isinstance(result, cst.FlattenSentinel):
            nodes = list(result.nodes)
            if nodes and hasattr(nodes[0], "leading_lines"):
                nodes[0] = _with_comments(nodes[0], comments)
            return cst.FlattenSentinel(nodes)
        if isinstance(result, cst.RemovalSentinel) or not hasattr(result, "leading_lines"):
            return result
        return _with_comments(result, comments)

    def _add_lazy_imports(self, original, result):
        """The imports and settings that code in this block needs, after the block's own imports."""
        keys = self.ctx.lazy_imports_for(original)
        if not keys or not isinstance(result.body, cst.IndentedBlock):
            return result
        lines = list(result.body.body)
        present = {code_of(s).strip() for s in lines if is_import_line(s)}
        requests = [self.ctx.imports_needed[key] for key in keys if key in self.ctx.imports_needed]
        # an import asked for a module-level helper only (which imports it itself) is not this block's
        settings = [cst.parse_statement(key + "\n") for key in keys if key not in self.ctx.imports_needed]
        read = set().union(import_edits.names_read(result), *(import_edits.names_read(s) for s in settings))
        requests = [r for r in requests if import_edits.bound_by(r) in read]
        if requests:
            # names from a module the block already imports from join that line, as at module level
            block, requests = import_edits.extend_from_imports(cst.Module(body=lines), requests)
            lines = list(block.body)
        texts = [text for text in import_edits.import_lines(requests) if text not in present]
        new = [cst.parse_statement(text + "\n") for text in texts]
        for key in keys:
            if key not in self.ctx.imports_needed:
                comment = [cst.EmptyLine(comment=cst.Comment(f"# {self.ctx.setup[key]}"))] if self.ctx.setup[key] else []
                new.append(cst.parse_statement(key + "\n").with_changes(leading_lines=comment))
        if not new:
            return result
        first = next(i for i, s in enumerate(lines) if is_import_line(s))
        end = next((i for i in range(first, len(lines)) if not is_import_line(lines[i])), len(lines))
        return result.with_changes(body=result.body.with_changes(body=[*lines[:end], *new, *lines[end:]]))

    def _without_stale_markers(self, original, node, fresh):
        """Drop the TODO markers of an earlier run above ``node`` that this run does not write again:
        the code they asked about is gone (edited by hand), or changed so that the marker now reads
        differently (the new one replaces it). Review markers, the TODOs of edits already made and
        those of rules not run this time stay: a rerun cannot know they are out of date."""
        lines = node.leading_lines
        if not any(line.comment is not None and self._is_stale(line.comment.value, ()) for line in lines):
            return node
        fresh = {text.strip() for text in fresh}
        kept = self._kept_lines(original, lines, fresh)
        return node.with_changes(leading_lines=kept)

    def _kept_lines(self, original, lines, fresh) -> list[cst.EmptyLine]:
        """``lines`` without the stale markers, each dropped one reported against ``original``."""
        kept = []
        for line in lines:
            if line.comment is None or not self._is_stale(line.comment.value, fresh):
                kept.append(line)
                continue
            meta = self.metas[site_todo_rule(line.comment.value)]
            self.ctx.record_dropped_marker(meta, original, line.comment.value)
        return kept

    def _is_stale(self, comment: str, fresh) -> bool:
        rule = site_todo_rule(comment)
        return rule is not None and rule in self.droppable_todos and comment.strip() not in fresh

    def _without_header_repeats(self, module: cst.Module) -> cst.Module:
        """Comments above a file's first statement parse as the module header, so on a second run the
        markers given to that statement are there already: drop the repeats (keeps the fixpoint),
        and the header's stale TODO markers (see _without_stale_markers)."""
        if not module.body or not module.header or not hasattr(module.body[0], "leading_lines"):
            return module
        fresh = {text.strip() for text in self.first_markers}
        header = self._kept_lines(self.first_statement, module.header, fresh)
        if len(header) != len(module.header):
            module = module.with_changes(header=header)
        texts = {line.comment.value.strip() for line in header if line.comment is not None}
        first = module.body[0]
        lines = [line for line in first.leading_lines if line.comment is None or line.comment.value.strip() not in texts]
        if len(lines) == len(first.leading_lines):
            return module
        return module.with_changes(body=[first.with_changes(leading_lines=lines), *module.body[1:]])

    def _replace_line(self, line: cst.SimpleStatementLine, statements: list[cst.BaseStatement]):
        if not statements:
            self.deleted_lines[id(line)] = list(line.leading_lines)
            return line
        first = statements[0]
        statements = [first.with_changes(leading_lines=[*line.leading_lines, *first.leading_lines]), *statements[1:]]
        last = statements[-1]
        if isinstance(last, cst.SimpleStatementLine) and line.trailing_whitespace.comment is not None:
            statements[-1] = last.with_changes(trailing_whitespace=line.trailing_whitespace)
        return cst.FlattenSentinel(statements)

    def _replaced_small_statements(self, original, updated) -> list[cst.BaseStatement] | None:
        """The statements that the small statements of ``updated`` become, each kept one as a line
        of its own; None when no rule replaced any of them."""
        stand_ins = dict(self.stand_ins.pop(id(original)))
        if len(updated.body) != len(original.body):
            if any(id(line) in self.pending_statements for line in stand_ins.values()):
                # A line rule dropped a statement, so the replacements no longer line up: fail the
                # file rather than report an edit that is not made.
                raise InternalError("a line rule and a statement rule both rewrote one line of several statements")
            return None
        in_suite = isinstance(original, cst.SimpleStatementSuite)
        statements: list[cst.BaseStatement] = []
        changed = False
        for index, small in enumerate(updated.body):
            line = cst.SimpleStatementLine(body=[small.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)])
            stand_in = stand_ins.get(index)
            left = self._leave_stand_in(stand_in, line) if stand_in is not None and in_suite else line
            replacement = self.pending_statements.pop(id(stand_in), None)
            if replacement is None and left is not line:  # a line hook of a one-line suite rewrote it
                replacement = [left]
            changed = changed or replacement is not None
            statements.extend([line] if replacement is None else replacement)
        return statements if changed else None

    def _leave_stand_in(self, stand_in: cst.SimpleStatementLine, line: cst.SimpleStatementLine):
        """The rules' ``leave_SimpleStatementLine`` hooks, for a statement of a one-line suite."""
        hook = "leave_SimpleStatementLine"
        for rule in self.index.hooks.get(hook, ()):
            result = self._apply(rule, hook, stand_in, line)
            if not isinstance(result, cst.SimpleStatementLine):
                break
            line = result
        return line

    def _replace_in_suite(self, original: cst.SimpleStatementSuite, updated: cst.SimpleStatementSuite):
        """``if x: f()``: the suite keeps its one-line form while every statement stays simple
        (``pass`` when none is left); a compound replacement turns it into an indented block."""
        statements = self._replaced_small_statements(original, updated)
        if statements is None:
            return updated
        small = _small_statements(statements)
        if small is not None:
            return updated.with_changes(body=small or [cst.Pass()])
        return cst.IndentedBlock(header=updated.trailing_whitespace, body=statements)

    def _replace_in_line(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        """``a(); f()``: one line while every statement stays simple, else one line per statement."""
        statements = self._replaced_small_statements(original, updated)
        if statements is None:
            return updated
        small = _small_statements(statements)
        if small is not None:
            # the line's own comments and blank lines above it are carried over by _replace_line, once
            kept = updated.with_changes(body=small, leading_lines=())
            return self._replace_line(updated, [kept] if small else [])
        return self._replace_line(updated, statements)

    def _drop_deleted_lines(self, block):
        if not self.deleted_lines or not any(id(s) in self.deleted_lines for s in block.body):
            return block
        body: list = []
        carried: list[cst.EmptyLine] = []
        for stmt in block.body:
            if id(stmt) in self.deleted_lines:
                carried.extend(self.deleted_lines.pop(id(stmt)))
                continue
            if carried:
                stmt = stmt.with_changes(leading_lines=_merge_lines(carried, stmt.leading_lines))
                carried = []
            body.append(stmt)
        if carried and not body and isinstance(block, cst.IndentedBlock) and any(line.comment for line in carried):
            # the block's `pass` comes after what the deleted lines said, not before it
            body = [cst.SimpleStatementLine([cst.Pass()], leading_lines=_comments_with_gap(carried))]
        elif carried:
            return block.with_changes(body=body, footer=[*_comments_with_gap(carried), *block.footer])
        return block.with_changes(body=body)

    def _note_legacy(self, node: cst.CSTNode) -> None:
        if self.import_depth or id(node) in self.inner_attrs or not self.ctx.statement_stack:
            return
        if _binds(self.ctx.statement_stack[-1], node):
            return  # `except ImportError: xm = None`, `class xm:`: a new binding of the name, not a use
        if self.ctx.shim_bound and self.ctx.is_shim_name(node):
            self._report_shim_use(node)
            return
        for qname in self.ctx.qualified_names(node):
            if qname.startswith(self.legacy_prefixes) and self.shims:
                self._report_shim_use(node)  # kept for the legacy stack, and said so on its line
                return
            if qname.startswith(self.legacy_prefixes):
                self.legacy_refs.append(LegacyRef(node, qname, self.ctx.statement_stack[-1]))
                return

    def _report_leftovers(self, statement) -> None:
        since = self.handled_before.pop(id(statement), 0)
        if self.leftover_rule is None:
            return
        remaining = []
        for ref in self.legacy_refs:
            if ref.statement is not statement:
                remaining.append(ref)
                continue
            if self._handled(self.ctx.span(ref.node), since) or self._turned_off(ref.qname):
                continue
            rule = self.leftover_rule
            if self.ctx.is_suppressed(rule.meta.id, ref.node):
                self.ctx.record_suppressed(rule.meta, ref.node)
            else:
                self.ctx.manual(rule.meta, ref.node, rule.message_for(ref.qname), fix=rule.fix_for(ref.qname))
            self.handled_spans.append(self.ctx.span(ref.node))
        self.legacy_refs = remaining

    def _turned_off(self, qname: str) -> bool:
        names = self.deselected_names
        return bool(names) and (qname in names or any(qname.startswith(n + ".") for n in names))

    def _handled(self, span: Span, since: int) -> bool:
        start, end = (span.line, span.column), (span.end_line, span.end_column)
        spans = self.handled_spans
        for h in (spans[i] for i in range(since, len(spans))):
            if (h.line, h.column) <= start and end <= (h.end_line, h.end_column):
                return True
        return False

    def _enter_guard(self, node: cst.CSTNode) -> None:
        """A dual-stack guard is migrated like any code, the import pass then giving a ``try:`` guard the
        TorchNeuron probe in place of its legacy imports. With --keep-dual-stack the guard's branch is
        migrated into a neuron copy put beside it (see dual_stack.py), or, where that cannot be done, kept
        and reported."""
        if not self.guards_kept:
            if isinstance(node, cst.Try) and is_shim(node, self.legacy_prefixes):
                self.guard_trys.append(node)
            return
        if self.shims or self.pairing or not self._is_shim(node):
            return  # inside a branch kept as it is, or inside a neuron copy: plain code there
        state = self._guard_state(node) if self.pairs_guards else dual_stack.KEPT
        if state is None:
            return  # the neuron branch of a guard paired before: plain code
        if state == dual_stack.PAIRED:
            self.shims.append(node.body)
            self.quiet_shims.add(id(node.body))
        elif state == dual_stack.PAIRABLE:
            self.pairing.append((node, len(self.ctx.findings), len(self.ctx.imports_needed)))
            self.ctx.neuron_copy_depth += 1
        elif dual_stack.only_imports(node.body):
            # ``if is_torch_xla_available(): import torch_xla``: the neuron side needs nothing of it
            self.shims.append(node)
            self.quiet_shims.add(id(node))
        else:
            self._report_shim(node)
            self.shims.append(node)

    def _guard_state(self, node: cst.CSTNode) -> str | None:
        rule = self.shim_rule
        if isinstance(node, cst.Try):
            if dual_stack.holds_probe(node, rule.PROBE):
                return None
            return dual_stack.try_state(node, rule.PROBE)
        return dual_stack.if_state(node, rule.NEURON_CHECKS, self._plainly_legacy)

    def _plainly_legacy(self, test: cst.BaseExpression) -> bool:
        """``check()``, ``FLAG``, or either joined to more by ``and``: a test whose neuron twin is known."""
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            return self._plainly_legacy(test.left) or self._plainly_legacy(test.right)
        if isinstance(test, cst.Name):
            return test.value in self.ctx.shim_flags
        if isinstance(test, cst.Call) and not test.args:
            return bool(self.ctx.qualified.imported(test.func) & self.shim_rule.calls.keys())
        return False

    def _pair(self, original, result):
        """The guard with its legacy branch as it was and the migrated copy beside it (--keep-dual-stack)."""
        node, findings, imports = self.pairing.pop()
        self.ctx.neuron_copy_depth -= 1
        rule = self.shim_rule
        if isinstance(original, cst.Try):
            paired = dual_stack.paired_try(original, result, rule.PROBE, self.ctx.shim_flags, self.legacy_prefixes)
        else:
            paired = dual_stack.paired_if(original, result, self._neuron_test(original, result), self.legacy_prefixes)
        if paired is None:
            # The neuron side needs nothing of this branch (it only synchronised, say): the guard stays as it was.
            del self.ctx.findings[findings:]
            for key in list(self.ctx.imports_needed)[imports:]:
                del self.ctx.imports_needed[key]
            return original
        self.ctx.record_edit(rule.meta, original, Edit(None, review=rule.PAIRED_REVIEW, message=rule.PAIRED_MESSAGE))
        return paired

    def _neuron_test(self, original: cst.If, result: cst.If) -> cst.BaseExpression:
        """The migrated test (its availability check renamed), or for a flag, TorchNeuron's own check."""
        if not (self.ctx.shim_flags and _tests_flag(original.test, self.ctx.shim_flags)):
            return result.test
        torch = self.ctx.require_import("torch")
        check = cst.parse_expression(self.shim_rule.NEURON_AVAILABLE.format(torch=torch))
        if isinstance(result.test, cst.Name):
            return check
        # joined to more of the test: the check keeps its own parentheses
        check = check.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return result.test.visit(_FlagReplaced(self.ctx.shim_flags, check))

    def _is_shim(self, node: cst.CSTNode) -> bool:
        if is_shim(node, self.legacy_prefixes, self.guard_names):
            return True
        # ``if HAVE_XLA:`` (or ``if HAVE_XLA and ...:``) with the flag set by a ``try: import torch_xla``
        return isinstance(node, cst.If) and bool(self.ctx.shim_flags) and _tests_flag(node.test, self.ctx.shim_flags)

    def _report_shim_use(self, node: cst.CSTNode) -> None:
        statement = self.ctx.statement_stack[-1]
        if self.shim_rule is None or id(statement) in self.shim_uses or (self.shims and id(self.shims[-1]) in self.quiet_shims):
            return
        self.shim_uses.add(id(statement))
        self.ctx.report(self.shim_rule.meta, node, self.shim_rule.USE_MESSAGE.format(name=root_name(node)))

    def _report_shim(self, node: cst.CSTNode) -> None:
        if self.shim_rule is None:
            return
        if self.pairs_guards:
            self.ctx.manual(self.shim_rule.meta, node, self.shim_rule.UNPAIRED_MESSAGE)
        else:
            self.ctx.report(self.shim_rule.meta, node, self.shim_rule.MESSAGE)


def _named_part(node: cst.CSTNode) -> cst.CSTNode:
    """The part of ``node`` whose qualified name says which rules it concerns: a call's callee."""
    return node.func if isinstance(node, cst.Call) else node


def _answered_for(node: cst.CSTNode) -> cst.CSTNode:
    """The part of ``node`` a rule answers for. A call handler answers for the callee: the
    arguments were visited, and migrated or reported, on their own, and a legacy name left inside
    one that the rule carried over (``print(met.metrics_report())``) still needs its NM100 marker."""
    return node.func if isinstance(node, cst.Call) else node


def _emptied_branch(original, result) -> bool:
    """An ``if`` (no ``else``) whose statements the rules all deleted, leaving no comment, and whose test
    only tests: it can go."""
    if not isinstance(result, cst.If) or result.orelse is not None or not isinstance(result.body, cst.IndentedBlock):
        return False
    if result.body.body or not original.body.body or any(line.comment for line in result.body.footer):
        return False
    return result.body.header.comment is None and only_tests(result.test)


def _binds(statement: cst.CSTNode, node: cst.CSTNode) -> bool:
    """Whether ``node`` is a name ``statement`` binds: ``xm = None``, ``class xm:``, ``def xm():``."""
    if isinstance(statement, (cst.ClassDef, cst.FunctionDef)):
        return statement.name is node
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    return any(
        isinstance(small, cst.Assign) and any(target.target is node for target in small.targets)
        for small in statement.body
    )


def _tagged(line_end: cst.TrailingWhitespace, tag: str | None) -> cst.TrailingWhitespace:
    """``line_end`` ending in ``tag``; a comment the line has already keeps its place, the tag follows."""
    if tag is None:
        return line_end
    if line_end.comment is None:
        return line_end.with_changes(whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(tag))
    if "neuron-migrate" in line_end.comment.value:
        return line_end
    return line_end.with_changes(comment=cst.Comment(f"{line_end.comment.value}  {tag}"))


class _FlagReplaced(cst.CSTTransformer):
    """A test with each bare flag name replaced by ``check``."""

    def __init__(self, flags, check: cst.BaseExpression) -> None:
        super().__init__()
        self.flags = flags
        self.check = check

    def visit_Attribute(self, node) -> bool:
        return False

    def visit_Call(self, node) -> bool:
        return False

    def leave_Name(self, original: cst.Name, updated: cst.Name):
        return self.check if updated.value in self.flags else updated


class _LineEndTags(cst.CSTTransformer):
    def __init__(self, tags: dict[int, str]) -> None:
        super().__init__()
        self.tags = tags

    def leave_TrailingWhitespace(self, original, updated):
        return _tagged(updated, self.tags.get(id(original)))


def _small_statements(statements: list[cst.BaseStatement]) -> list[cst.BaseSmallStatement] | None:
    """The small statements of ``statements`` when all are plain one-line statements without
    comments of their own (they then fit on one line, joined by semicolons), else None."""
    small: list[cst.BaseSmallStatement] = []
    for statement in statements:
        if not isinstance(statement, cst.SimpleStatementLine) or any(line.comment for line in statement.leading_lines):
            return None
        small.extend(s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT) for s in statement.body)
    return small


class _Requote(cst.CSTTransformer):
    def __init__(self, banned: set[str]) -> None:
        super().__init__()
        self.banned = banned

    def leave_SimpleString(self, original, updated: cst.SimpleString) -> cst.SimpleString:
        quote = updated.quote
        if quote[0] not in self.banned:
            return updated
        other = "'" if quote[0] == '"' else '"'
        body = updated.value[len(updated.prefix) + len(quote) : -len(quote)]
        if other in self.banned or other in body:
            return updated
        new_quote = other * len(quote)
        return updated.with_changes(value=f"{updated.prefix}{new_quote}{body}{new_quote}")


@dataclass
class _Scheduled:
    line: cst.SimpleStatementLine
    statements: list[cst.BaseStatement]
    after: str


def _merge_lines(carried: list[cst.EmptyLine], own) -> list[cst.EmptyLine]:
    """A deleted line's comments move to the next statement; its blank lines only when that
    statement has none of its own, so deleting never glues paragraphs together nor doubles gaps."""
    own = list(own)
    if any(line.comment is None for line in own):
        carried = _comments_with_gap(carried)
    return [*carried, *own]


def _comments_with_gap(lines: list[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """The comment lines of ``lines``, with the blank lines above the first of them: they separated
    that comment from the code before."""
    first = next((i for i, line in enumerate(lines) if line.comment is not None), None)
    if first is None:
        return []
    return [*lines[:first], *(line for line in lines[first:] if line.comment is not None)]


def _with_comments(node, comments: list[str]):
    existing = {line.comment.value.strip() for line in node.leading_lines if line.comment is not None}
    new_lines = [cst.EmptyLine(comment=cst.Comment(c)) for c in comments if c not in existing]
    if not new_lines:
        return node
    return node.with_changes(leading_lines=[*node.leading_lines, *new_lines])


def _code_of_result(result) -> str:
    if isinstance(result, cst.FlattenSentinel):
        return "".join(code_of(n) for n in result.nodes)
    if isinstance(result, cst.RemovalSentinel):
        return ""
    return code_of(result)


def migrate_python(
    source: str,
    path: str,
    plan: RulePlan,
    *,
    no_comments: bool = False,
    cell: int | None = None,
) -> PythonResult:
    """Rewrite one Python source text. Raises ``cst.ParserSyntaxError`` for input that does not parse
    and :class:`InternalError` when the rewrite would not parse."""
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    ctx = FileContext(
        path=path,
        wrapper=wrapper,
        roots=plan.roots,
        legacy_prefixes=plan.legacy_prefixes,
        no_comments=no_comments,
        cell=cell,
        guards_kept=plan.guards_kept,
        keep_dual_stack=plan.keep_dual_stack,
        guard_names=frozenset(plan.guard_names),
    )
    transformer = MigrationTransformer(ctx, plan)
    new_module = wrapper.module.visit(transformer)
    changed = any(f.applied and not f.suppressed for f in ctx.findings)
    if changed or ctx.has_legacy_imports:
        probe, marker = _guard_texts(plan, no_comments)
        probed: frozenset[str] = frozenset()
        if probe and ctx.probed_names:
            new_module, probed = import_edits.probe_presence_tests(new_module, ctx.probed_names, plan.shim.PROBE_NAME)
        new_module, removed, guards = import_edits.remove_unused_legacy_imports(
            new_module, plan.retired_names, plan.guard_names, probe, marker, probed
        )
        _report_removed_imports(ctx, plan, transformer.import_statements, removed)
        _report_guards(ctx, plan, transformer.guard_trys, guards)
        changed = changed or bool(removed)
    # What only lazily imported code needs went into that code's block (see FileContext.is_lazy).
    imports = [request for key, request in ctx.imports_needed.items() if not ctx.is_lazy(key)]
    lazy = [request for key, request in ctx.imports_needed.items() if ctx.is_lazy(key)]
    # A helper defined at module level reads module-level names only: what it needs from an import that went
    # into a function (a lazily importing module), it imports itself.
    setup = {
        import_edits.with_own_imports(code, lazy): why for code, why in ctx.setup.items() if not ctx.is_lazy(code)
    }
    if imports and changed and not plan.guards_kept:
        new_module, imports = import_edits.guard_probe_imports(new_module, imports, plan.shim.PROBE)
    if imports and changed:
        new_module = import_edits.add_imports(new_module, imports)
    if setup and changed:
        new_module = import_edits.add_setup(new_module, setup)
    code = new_module.code
    if code != source:
        tree = _check_parses(code, path, ctx.findings)
        _check_names(source, code, path, ctx.findings, tree)
    return PythonResult(source=source, code=code, findings=ctx.findings, reproduced=ctx.text)


def _guard_texts(plan: RulePlan, no_comments: bool) -> tuple[str, str]:
    """The TorchNeuron probe a ``try:`` guard gets in place of its legacy imports, and the marker above
    a guard whose legacy import is still read; empty when guards are kept as they are."""
    if plan.guards_kept:
        return "", ""
    rule = plan.shim
    return rule.PROBE, "" if no_comments else markers.comment(rule.meta.id, MANUAL, rule.LEGACY_IMPORT_KEPT)


def _report_guards(ctx: FileContext, plan: RulePlan, trys: list[cst.Try], outcomes) -> None:
    rule = plan.shim
    for outcome in outcomes:
        if plan.guards_kept or outcome.ordinal >= len(trys):
            continue
        node = trys[outcome.ordinal]
        for name in outcome.probed:
            ctx.record_edit(rule.meta, node, Edit(None, safe=True, message=rule.PRESENCE_MESSAGE.format(name=name)))
        if outcome.kind == "probe":
            ctx.record_edit(rule.meta, node, Edit(None, safe=True, message=rule.PROBE_MESSAGE), after=rule.PROBE)
        elif outcome.kind == "gone":
            ctx.record_edit(rule.meta, node, Edit(None, safe=True, message=rule.GONE_MESSAGE))
        else:
            ctx.record_manual(rule.meta, node, rule.LEGACY_IMPORT_KEPT)


def _report_removed_imports(ctx: FileContext, plan: RulePlan, statements, removed: list[str]) -> None:
    rule = plan.unused_import
    if rule is None:
        return
    # The remover reports in document order: the n-th removal of one text is that text's n-th import.
    taken: set[int] = set()
    for text in removed:
        statement = next((s for s in statements if id(s) not in taken and text in _import_texts(s)), None)
        if statement is None:
            continue
        if len(_import_texts(statement)) == 1:
            taken.add(id(statement))
        ctx.record_edit(rule.meta, statement, Edit(None, message=f"`{text}` removed: nothing uses it after the migration"))


def _import_texts(statement) -> set[str]:
    """Each name an import line binds, spelled as the import remover reports it."""
    texts = set()
    for small in getattr(statement, "body", ()):
        if isinstance(small, cst.Import):
            texts.update(f"import {code_of(a.name)}{import_edits.as_clause(a)}" for a in small.names)
        elif isinstance(small, cst.ImportFrom) and small.module and not isinstance(small.names, cst.ImportStar):
            module = code_of(small.module)
            texts.update(f"from {module} import {code_of(a.name)}{import_edits.as_clause(a)}" for a in small.names)
    return texts


def _check_parses(code: str, path: str, findings: list[Finding]) -> ast.Module:
    try:
        return ast.parse(code, filename=path)
    except SyntaxError as exc:
        rules = sorted({f.rule for f in findings if f.applied})
        raise InternalError(f"rewrite by {', '.join(rules) or 'the engine'} does not parse: {exc}") from exc


def _check_names(source: str, code: str, path: str, findings: list[Finding], tree: ast.Module) -> None:
    """A rewrite never reads a name it did not bind: such a file fails instead of being written."""
    unbound = new_unbound_reads(source, code, path, tree)
    if unbound:
        rules = sorted({f.rule for f in findings if f.applied})
        raise InternalError(f"rewrite by {', '.join(rules) or 'the engine'} would read a name nothing binds: {', '.join(unbound)}")


def _tests_flag(test: cst.BaseExpression, flags: frozenset[str]) -> bool:
    """``FLAG`` or ``FLAG and ...``: the branch runs only when the flag is set."""
    if isinstance(test, cst.Name):
        return test.value in flags
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _tests_flag(test.left, flags) or _tests_flag(test.right, flags)
    return False
