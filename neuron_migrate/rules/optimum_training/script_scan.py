"""The file scan of the training rules: the original tree read once, before any rule rewrites it.

It fills the file's :class:`~.script_facts.ScriptFacts` (``script_facts(ctx)``): the variables that
hold legacy training arguments, the dicts spread into their calls, the trn_config of each training
``from_pretrained`` and the lines that only built it, the fields read after the migration.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import ScopeProvider

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules import hf_fields as hf
from neuron_migrate.rules.base import Fact
from neuron_migrate.rules.calls import literal
from neuron_migrate.rules.optimum_training.classes import (
    ACCELERATE,
    ACCELERATOR_ONLY,
    ARGUMENT_CLASSES,
    FROM_PRETRAINED,
    LAZY_LOAD,
    PARSE_METHODS,
    PARSER_NAMES,
    TRN_CONFIG,
    Target,
)
from neuron_migrate.rules.optimum_training.field_reads import FIELD_READS, plan_fields
from neuron_migrate.rules.optimum_training.script_facts import (
    Parse,
    ScriptFacts,
    Spread,
    TrnSizes,
    _callee_name,
    _nodes,
    _returns_remaining,
    _trn_config_arg,
    literal_entries,
    trn_config_sizes,
)
from neuron_migrate.rules.xla_step.common import source_text


class _Collector(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[cst.Call] = []
        self.assigns: dict[int, tuple[cst.Assign, cst.SimpleStatementLine]] = {}
        self.top_lines: set[int] = set()
        self.lines: list[cst.SimpleStatementLine] = []
        self.bases: list[cst.Arg] = []
        # ``x.field`` reads of a field some legacy arguments class had and the stock one lacks
        self.field_reads: list[cst.Attribute] = []
        # ``x.trn_config.tensor_parallel_size``
        self.trn_config_reads: list[cst.Attribute] = []
        # ids of the attributes assigned to (``x.field = 1``)
        self.stores: set[int] = set()
        # id(Param) -> its function
        self.functions: dict[int, cst.FunctionDef] = {}
        self.classes: list[cst.ClassDef] = []

    def visit_Module(self, node: cst.Module) -> None:
        self.top_lines.update(id(s) for s in node.body)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if isinstance(node.body, cst.IndentedBlock):
            self.top_lines.update(id(s) for s in node.body.body)
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            self.functions[id(param)] = node

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name) and node.attr.value in FIELD_READS:
            self.field_reads.append(node)
        elif isinstance(node.value, cst.Attribute) and node.value.attr.value == "trn_config":
            self.trn_config_reads.append(node)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.stores.add(id(node.target))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.stores.add(id(node.target))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.stores.add(id(node.target))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.bases.extend(node.bases)
        self.classes.append(node)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.lines.append(node)
        if len(node.body) == 1 and isinstance(node.body[0], cst.Assign):
            assign = node.body[0]
            if len(assign.targets) == 1:
                self.assigns[id(assign.targets[0].target)] = (assign, node)

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)


def _scan_script(ctx) -> ScriptFacts:
    # Empty facts for files that never mention optimum: the family's node hooks also see every torch_xla file.
    return _Scanner(ctx).scan() if "optimum" in source_text(ctx) else ScriptFacts()


SCRIPT_FACTS = Fact("optimum_training", _scan_script)


def script_facts(ctx) -> ScriptFacts:
    """The cross-statement facts of this file, gathered once from the original tree."""
    return ctx.fact(SCRIPT_FACTS)


class _Scanner:
    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.facts = ScriptFacts()
        self.seen = _Collector()
        self._scopes = None
        self.spread_nodes: list[tuple[cst.BaseExpression, Spread]] = []

    @property
    def scopes(self):
        if self._scopes is None:
            self._scopes = self.ctx.wrapper.resolve(ScopeProvider)
        return self._scopes

    def qname(self, node: cst.CSTNode, table) -> str | None:
        return self.ctx.any_qualified_name(node, table)

    def scan(self) -> ScriptFacts:
        self.ctx.module.visit(self.seen)
        self.facts.class_bases = {id(base.value) for base in self.seen.bases}
        parsers: dict[int, list[Target | None]] = {}
        for call in self.seen.calls:
            func = call.func
            if self.qname(func, ARGUMENT_CLASSES):
                self._note_spreads(call, ARGUMENT_CLASSES[self.qname(func, ARGUMENT_CLASSES)])
            if _callee_name(func) in PARSER_NAMES and call.args:
                first = call.args[0].value
                elements = [e.value for e in first.elements] if isinstance(first, (cst.Tuple, cst.List)) else [first]
                self.facts.parser_elements.update(id(e) for e in elements)
                parsers[id(call)] = [ARGUMENT_CLASSES.get(self.qname(e, ARGUMENT_CLASSES) or "") for e in elements]
        for line in self.seen.lines:
            self._note_assignment(line, parsers)
        for node, spread in self.spread_nodes:
            spread.arguments = self._dict_of_arguments(node)
        for call in self.seen.calls:
            if self.qname(call.func, LAZY_LOAD):
                self.facts.lazy_args.update(id(n) for arg in call.args for n in _nodes(arg))
        self.facts.fields = plan_fields(self, ARGUMENT_CLASSES)
        for call in self.seen.calls:
            if self.qname(call.func, FROM_PRETRAINED):
                self._note_from_pretrained(call)
            elif self.qname(call.func, ACCELERATE):
                # NeuronAccelerator(trn_config=args.trn_config): the argument goes with its own TODO
                for arg in call.args:
                    if arg.keyword is not None and arg.keyword.value in ACCELERATOR_ONLY:
                        self.facts.skip_nodes.update(id(n) for n in _nodes(arg.value))
        return self.facts

    # Variables holding Neuron training arguments:
    def _note_assignment(self, line: cst.SimpleStatementLine, parsers) -> None:
        if len(line.body) != 1 or not isinstance(line.body[0], cst.Assign):
            return
        assign = line.body[0]
        value = assign.value
        if not isinstance(value, cst.Call) or len(assign.targets) != 1:
            return
        target = assign.targets[0].target
        if isinstance(target, cst.Name) and self.qname(value.func, ARGUMENT_CLASSES):
            self.facts.args_names[target.value] = value
            self.facts.args_targets[target.value] = ARGUMENT_CLASSES[self.qname(value.func, ARGUMENT_CLASSES)]
            return
        # ``a, training_args = parser.parse_args_into_dataclasses()`` with a parser built from Neuron classes
        if not isinstance(target, (cst.Tuple, cst.List)) or _callee_name(value.func) not in PARSE_METHODS:
            return
        parser = value.func.value if isinstance(value.func, cst.Attribute) else None
        classes = self._parser_classes(parser, parsers)
        elements = list(target.elements)
        if classes is not None and len(elements) == len(classes) + 1 and _returns_remaining(value):
            elements = elements[:-1]
        if classes is None or len(classes) != len(elements) or not any(classes):
            return
        parse = Parse()
        for element, legacy in zip(elements, classes):
            if not isinstance(element.value, cst.Name):
                continue
            name = element.value.value
            parse.names[name] = (element.value, legacy)
            self.facts.parse_names[id(element.value)] = parse
            if legacy is not None:
                self.facts.args_names[name] = None
                self.facts.args_targets[name] = legacy

    def _parser_classes(self, parser, parsers) -> list[Target | None] | None:
        """The legacy arguments class of each dataclass the parser parses (None for another dataclass)."""
        if isinstance(parser, cst.Call):
            return parsers.get(id(parser))
        if not isinstance(parser, cst.Name):
            return None
        assign = self._single_assignment(parser)
        if assign is None or not isinstance(assign[0].value, cst.Call):
            return None
        return parsers.get(id(assign[0].value))

    def _single_assignment(self, name: cst.Name):
        """``(Assign, its line, the scope's Assignment)`` for the one binding ``name`` refers to, if any."""
        scope = self.scopes.get(name)
        if scope is None:
            return None
        referents = set()
        for access in scope.accesses[name.value]:
            if access.node is name:
                referents = access.referents
        if len(referents) != 1:
            return None
        (assignment,) = referents
        if len(assignment.scope.assignments[name.value]) != 1:
            return None
        found = self.seen.assigns.get(id(assignment.node))
        if found is None:
            return None
        return found[0], found[1], assignment

    # ``**kwargs`` of arguments classes:
    def _note_spreads(self, call: cst.Call, target: Target) -> None:
        for arg in call.args:
            if arg.star != "**":
                continue
            spread = Spread(entries=None)
            self.facts.spreads[id(arg.value)] = spread
            self.spread_nodes.append((arg.value, spread))
            if not isinstance(arg.value, cst.Name):
                continue
            found = self._single_assignment(arg.value)
            if found is None:
                continue
            assign, line, assignment = found
            spread.entries = literal_entries(assign.value)
            if spread.entries is None:
                continue
            # Edited in place only when this call is the dict's one use and its line is easy to see.
            if len(assignment.references) == 1 and id(line) in self.seen.top_lines:
                spread.editable = True
                self.facts.dict_edits[id(assign.value)] = target

    def _dict_of_arguments(self, node: cst.BaseExpression, depth: int = 0) -> str:
        """``args`` when ``node`` is ``args.to_dict()`` (or a variable assigned from it once) and ``args``
        holds legacy training arguments."""
        if isinstance(node, cst.Name) and depth == 0:
            found = self._single_assignment(node)
            return self._dict_of_arguments(found[0].value, depth + 1) if found else ""
        if not (isinstance(node, cst.Call) and not node.args and isinstance(node.func, cst.Attribute)):
            return ""
        receiver = node.func.value
        if node.func.attr.value != "to_dict" or not isinstance(receiver, cst.Name):
            return ""
        return receiver.value if receiver.value in self.facts.args_names else ""

    # The trn_config of a training from_pretrained:
    def _note_from_pretrained(self, call: cst.Call) -> None:
        arg = _trn_config_arg(call)
        if arg is None:
            self.facts.trn[id(call)] = TrnSizes()
            return
        self.facts.skip_nodes.add(id(arg.value))
        self.facts.trn[id(call)] = self._resolve(arg.value, inline=True)

    def _resolve(self, expr: cst.BaseExpression, inline: bool) -> TrnSizes | None:
        if isinstance(expr, cst.Call) and self.qname(expr.func, TRN_CONFIG):
            return trn_config_sizes(expr, literal_only=not inline)
        if isinstance(expr, cst.Attribute) and expr.attr.value == "trn_config":
            receiver = self.facts.fields.receivers.get(id(expr))
            if receiver:
                # the sizes the parsed arguments held: the script's own dataclass takes them over
                return TrnSizes(sizes={size: f"{receiver}.{name}" for name, size in hf.PARALLEL_FIELDS.items()})
            built = self.facts.fields.built.get(id(expr))
            if built is not None:
                call, sizes, zero_1 = built
                self.facts.consumed_args.add(id(call))
                return TrnSizes(sizes=sizes, zero_1=zero_1)
            return self._sizes_of_arguments(expr.value)
        if not isinstance(expr, cst.Name):
            return None
        found = self._single_assignment(expr)
        if found is None:
            return None
        assign, line, assignment = found
        sizes = self._resolve(assign.value, inline=False)
        # ``x = args.trn_config`` only named what the call read; a TrainingNeuronConfig(...) goes only
        # when its sizes were read, so the TODO at the call never loses them.
        alias = isinstance(assign.value, cst.Attribute)
        if (sizes is not None or alias) and len(assignment.references) == 1 and id(line) in self.seen.top_lines:
            self.facts.deletable_lines.add(id(line))
            self.facts.skip_nodes.update(id(n) for n in _nodes(assign.value))
        return sizes

    def _sizes_of_arguments(self, expr: cst.BaseExpression) -> TrnSizes | None:
        if not isinstance(expr, cst.Name):
            return None
        call = self.facts.args_names.get(expr.value)
        if call is None:
            return None
        sizes = TrnSizes()
        for arg in call.args:
            name = arg.keyword.value if arg.keyword else None
            if arg.star:
                return None
            if name in hf.PARALLEL_FIELDS:
                value = literal(arg.value)
                if not isinstance(value, int):
                    return None
                if value > 1:
                    sizes.sizes[hf.PARALLEL_FIELDS[name]] = code_of(arg.value)
            elif name == "zero_1":
                sizes.zero_1 = literal(arg.value) is True
        self.facts.consumed_args.add(id(call))
        return sizes
