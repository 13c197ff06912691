"""The file's loading calls, read once for every loader rule: each call's arguments (with its literal
dict spreads), the dict assignments that only fed migrated calls (deleted with them), and the variables
that hold a loaded model (whose ``generate`` / ``save_pretrained`` calls the rules look at).

Each active loader rule lists its loading calls in ``LOADER_REGISTRY`` as the file starts; the first
rule to ask builds the ``LOADER_INDEX``. The rules are held here as the base Rule: the loader rule
class (:mod:`.loader_rule`) is built on this module.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
from libcst.metadata import ScopeProvider

from neuron_migrate.migrate.context import FileContext, code_of
from neuron_migrate.migrate.guards import is_shim
from neuron_migrate.rules.base import Fact, Rule
from neuron_migrate.rules.optimum_inference.reading import Reading, dict_literal, read_call, returns_tensors

# qname of a loading call -> the active rule handling it; filled by each rule's visit_Module
LOADER_REGISTRY: Fact[dict[str, Rule]] = Fact("optimum_loaders", lambda ctx: {})
# every loading call of the file and what it feeds, read once the registry is filled
LOADER_INDEX: Fact[LoaderIndex] = Fact("optimum_loader_index", lambda ctx: LoaderIndex(ctx, ctx.fact(LOADER_REGISTRY)))
# Methods of a loaded model that these rules look at.
WATCHED_METHODS = ("generate", "save_pretrained", "push_to_hub")
NEURON_CONFIG = "neuron_config"  # the compiled model's export settings
INIT = "init_process_group"
INIT_PROCESS_GROUP = frozenset({f"torch.distributed.{INIT}", f"torch.distributed.distributed_c10d.{INIT}"})


def _callee_name(call: cst.Call) -> str:
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""


class _LoaderScan(cst.CSTVisitor):
    """The loading calls of the file, the literal dicts assigned to a name, and method calls on names."""

    def __init__(self, ctx: FileContext, loaders: dict[str, Rule]) -> None:
        super().__init__()
        self.ctx = ctx
        self.loaders = loaders
        self.shim_depth = 0
        self.loads: list[tuple[cst.Call, Rule, str]] = []
        self.line_of: dict[int, cst.SimpleStatementLine] = {}  # id(call that is a line's whole value) -> line
        self.target_of: dict[int, cst.BaseExpression] = {}  # id(assigned call) -> its single target
        self.dicts: dict[int, tuple[cst.SimpleStatementLine, dict]] = {}  # id(target Name) -> (line, pairs)
        self.values: dict[int, tuple[cst.SimpleStatementLine, cst.BaseExpression]] = {}  # id(target Name) -> both
        self.method_calls: list[cst.Call] = []
        # ``x.neuron_config.field`` (field) and bare ``x.neuron_config`` (None), outermost node first
        self.neuron_configs: list[tuple[cst.Attribute, str | None]] = []
        self._inner_configs: set[int] = set()
        self.calls: list[cst.Call] = []  # every call of the file (outside shims)
        self.tensor_sources: set[int] = set()  # id(target Name) of ``x = f(..., return_tensors="pt")``
        self.moved: set[int] = set()  # id(Name) of every ``x.to``

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.ctx.guards_kept and is_shim(node, self.ctx.legacy_prefixes, self.ctx.guard_names):
            self.shim_depth += 1
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        super().on_leave(original_node)
        if self.ctx.guards_kept and is_shim(original_node, self.ctx.legacy_prefixes, self.ctx.guard_names):
            self.shim_depth -= 1

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if len(node.body) != 1:
            return
        small = node.body[0]
        value = getattr(small, "value", None)
        if isinstance(value, cst.Call):
            self.line_of[id(value)] = node
        target = None
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target = small.targets[0].target
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            target = small.target
        # Only a plain variable or attribute can be named again to reach the loaded model.
        if isinstance(target, cst.Name) and returns_tensors(small.value):
            self.tensor_sources.add(id(target))
        if isinstance(target, (cst.Name, cst.Attribute)):
            self.target_of[id(small.value)] = target
            if isinstance(target, cst.Name):
                self.values[id(target)] = (node, small.value)
            pairs = dict_literal(small.value) if isinstance(target, cst.Name) else None
            if pairs is not None:
                self.dicts[id(target)] = (node, pairs)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self.shim_depth:
            return
        inner = node.value
        if node.attr.value == "to" and isinstance(inner, cst.Name):
            self.moved.add(id(inner))
        if isinstance(inner, cst.Attribute) and inner.attr.value == NEURON_CONFIG:
            self.neuron_configs.append((node, node.attr.value))
            self._inner_configs.add(id(inner))
        elif node.attr.value == NEURON_CONFIG and id(node) not in self._inner_configs:
            self.neuron_configs.append((node, None))

    def visit_Call(self, node: cst.Call) -> None:
        if self.shim_depth:
            return
        self.calls.append(node)
        for qname in self.ctx.qualified_names(node.func):
            rule = self.loaders.get(qname)
            if rule is not None:
                self.loads.append((node, rule, qname))
                return
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in WATCHED_METHODS:
            self.method_calls.append(node)


@dataclass
class Load:
    """One legacy loading call of the file and what the index decided about it."""

    call: cst.Call
    rule: Rule
    reading: Reading | None
    migrates: bool
    target: str = ""  # code of the variable it is assigned to
    line: cst.SimpleStatementLine | None = None  # the line it is the whole value of
    qname: str = ""  # the loading function it calls
    # Another load whose settings this one takes (an export's get_neuron_config), and the variable
    # that carried them ("" when the call is written in place).
    linked: Load | None = None
    linked_through: str = ""


class LoaderIndex:
    """What the loader rules need to know about the whole file before rewriting any of it: each
    loading call read (with its literal dict spreads), the dict assignments that only fed migrated
    calls (deleted), and the variables that hold a loaded model (for generate/save_pretrained)."""

    def __init__(self, ctx: FileContext, loaders: dict[str, Rule]) -> None:
        self.ctx = ctx
        scan = _LoaderScan(ctx, loaders)
        ctx.module.visit(scan)
        self.scan = scan
        self._scopes = None
        self.loads: dict[int, Load] = {}
        # id(line) -> (rule, what the deletion says): assignments that only fed migrated calls
        self.deleted_lines: dict[int, tuple[Rule, str]] = {}
        self.kept_dicts: set[str] = set()  # dicts read by a migrated call and still used elsewhere
        self.methods: dict[int, Load] = {}  # id(method call on a loaded model) -> its load
        self.consumed: set[int] = set()  # id(Name) of every use a migrated call drops
        self._uses: dict[int, tuple[str, set[int]]] = {}  # id(assigned Name) -> (name, id of every use)
        spread_names: dict[int, dict[int, int]] = {}  # id(call) -> id(spread Name) -> id(dict target)
        for call, rule, qname in scan.loads:
            spreads: dict[int, int] = {}
            spread_names[id(call)] = spreads

            def resolve(expr, spreads=spreads):
                target = self.assigned_name(expr)
                if target is None or id(target) not in scan.dicts:
                    return None
                spreads[id(expr)] = id(target)
                return target.value, scan.dicts[id(target)][1]

            reading = read_call(call, resolve)
            migrates = reading is not None and rule.migrates(reading) and not self.is_suppressed(rule, call)
            target = scan.target_of.get(id(call))
            target_code = code_of(target) if target is not None else ""
            self.loads[id(call)] = Load(
                call, rule, reading, migrates, target_code, scan.line_of.get(id(call)), qname
            )
        self._deletions: list[tuple[cst.Name, cst.SimpleStatementLine, Rule, str]] = []
        for load in list(self.loads.values()):
            load.rule.link(load, self)
        for target, line, rule, message in self._deletions:
            if self.only_read_by(target, self.consumed):
                self.deleted_lines[id(line)] = (rule, message)
        for load in self.loads.values():
            if load.migrates:
                self.consumed.update(spread_names[id(load.call)])
                if load.linked is not None:
                    self.consumed.update(spread_names[id(load.linked.call)])
        for target_id, (name, uses) in self._uses.items():
            if target_id not in scan.dicts:
                continue
            line = scan.dicts[target_id][0]
            read_by = [load for load in self.loads.values() if load.migrates and self._reads(load, name)]
            if not read_by:
                continue
            if uses <= self.consumed:
                removed = f"`{name}` removed: the loading call it fed now passes what it still needs"
                self.deleted_lines[id(line)] = (read_by[0].rule, removed)
            else:
                self.kept_dicts.add(name)
        self._index_methods()
        self.neuron_configs = self._index_neuron_configs()

    def assigned_name(self, expr: cst.BaseExpression) -> cst.Name | None:
        """The target of the one assignment ``expr`` (a name) refers to, when it is a plain
        ``name = value`` line of this file; its uses are noted for :meth:`only_read_by`."""
        if not isinstance(expr, cst.Name) or not self.scan.values:
            return None
        if self._scopes is None:
            self._scopes = self.ctx.wrapper.resolve(ScopeProvider)
        scope = self._scopes.get(expr)
        if scope is None:
            return None
        assignments = [r for access in scope.accesses[expr] if access.node is expr for r in access.referents]
        if len(assignments) != 1:
            return None
        target = getattr(assignments[0], "node", None)
        if id(target) not in self.scan.values:
            return None
        uses = {id(access.node) for access in assignments[0].references}
        self._uses[id(target)] = (target.value, uses)
        return target

    def delete_when_consumed(self, target: cst.Name, line, rule: Rule, message: str) -> None:
        """Delete ``line`` (which assigns ``target``) if migrated calls consume every use of it."""
        self._deletions.append((target, line, rule, message))

    def only_read_by(self, target: cst.Name, readers: set[int]) -> bool:
        """Whether every use of the variable ``target`` assigns is one of ``readers`` (id of Names)."""
        found = self._uses.get(id(target))
        return found is not None and found[1] <= readers

    def starts_process_group(self) -> bool:
        """Whether the file calls ``torch.distributed.init_process_group`` itself."""
        names = self.ctx.qualified_names
        return any(names(call.func) & INIT_PROCESS_GROUP for call in self.scan.calls if _callee_name(call) == INIT)

    def cpu_tensors(self, name: cst.Name) -> bool:
        """Whether ``name`` is only ever bound to a ``return_tensors="pt"`` result that nothing moves."""
        if not self.scan.tensor_sources:
            return False
        if self._scopes is None:
            self._scopes = self.ctx.wrapper.resolve(ScopeProvider)
        scope = self._scopes.get(name)
        if scope is None:
            return False
        assignments = [r for access in scope.accesses[name] if access.node is name for r in access.referents]
        if len(assignments) != 1 or id(getattr(assignments[0], "node", None)) not in self.scan.tensor_sources:
            return False
        return not any(id(access.node) in self.scan.moved for access in assignments[0].references)

    @staticmethod
    def _reads(load: Load, name: str) -> bool:
        readings = [load.reading, load.linked.reading if load.linked is not None else None]
        return any(reading is not None and name in reading.spreads.values() for reading in readings)

    def is_suppressed(self, rule: Rule, call: cst.Call) -> bool:
        if not self.ctx.reporter.has_suppressions:
            return False
        span = self.ctx.span(call)
        return self.ctx.reporter.suppresses(rule.meta.id, range(span.line, span.end_line + 1))

    def _index_methods(self) -> None:
        by_target = {load.target: load for load in self.loads.values() if load.target}
        for call in self.scan.method_calls:
            receiver = call.func.value
            if isinstance(receiver, cst.Name):
                load = self._held_by(receiver, by_target.get(receiver.value))
            else:
                load = by_target.get(code_of(receiver))
            if load is not None:
                self.methods[id(call)] = load

    def _held_by(self, name: cst.Name, default: Load | None) -> Load | None:
        """The load whose result ``name`` holds where it is read: that of the last assignment to it
        above, in its own scope (``model`` may hold a stock model before or after); ``default`` when
        no assignment is above (a name the scope reads from outside)."""
        if default is None:
            return None
        if self._scopes is None:
            self._scopes = self.ctx.wrapper.resolve(ScopeProvider)
        scope = self._scopes.get(name)
        line = self.ctx.span(name).line
        above = [
            (self.ctx.span(target).line, value_id)
            for value_id, target in self.scan.target_of.items()
            if isinstance(target, cst.Name) and target.value == name.value and self._scopes.get(target) is scope
            and self.ctx.span(target).line < line
        ]
        if not above:
            return default
        load = self.loads.get(max(above)[1])
        return load if load is not None and load.target == name.value else None

    def _index_neuron_configs(self) -> dict[int, tuple[Load | None, str | None]]:
        """id(``x.neuron_config[.field]``) -> (the migrated load that assigned ``x`` or None, field)."""
        by_target = {load.target: load for load in self.loads.values() if load.target and load.migrates}
        out = {}
        for node, name in self.scan.neuron_configs:
            owner = node.value.value if name is not None else node.value
            out[id(node)] = (by_target.get(code_of(owner)), name)
        return out

    def method_calls(self, load: Load, method: str) -> list[cst.Call]:
        return [c for c in self.scan.method_calls if self.methods.get(id(c)) is load and c.func.attr.value == method]
