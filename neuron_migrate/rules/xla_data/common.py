"""What the xla_data rules share: helpers, constants and base classes."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import ScopeProvider

from neuron_migrate.migrate.context import FileContext, code_of
from neuron_migrate.rules.base import Edit, Fact, Rule
from neuron_migrate.rules.calls import bind_args, first_argument, is_plain_reference, names_in
from neuron_migrate.rules.tables.xla_data import XMP
from neuron_migrate.rules.xla_device.common import XLA_DEVICE_CALLS

DOCS_WHAT_CHANGES = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html"
PARALLEL_LOADER_MODULE = "torch_xla.distributed.parallel_loader"
MP_DEVICE_LOADER = f"{PARALLEL_LOADER_MODULE}.MpDeviceLoader"
PARALLEL_LOADER = f"{PARALLEL_LOADER_MODULE}.ParallelLoader"
PARALLEL_LOADER_PARAMS = ("loader", "devices")
# Calls a loop may wrap around a loader without changing its batches. True: the loop target is
# ``(index, batch)``.
PASS_THROUGH = {
    "enumerate": True,
    "iter": False,
    "islice": False,
    "itertools.islice": False,
    "tqdm": False,
    "tqdm.tqdm": False,
    "tqdm.auto.tqdm": False,
}
# A loader is followed through at most this many variables and function parameters.
MAX_HOPS = 4
LOOP_MESSAGE = "batch moved to the device here, as {loader} did; check tensors nested deeper in the batch are moved too"
# The loader's device was the process's default XLA device, which becomes the process's NeuronCore:
# a loop where that variable is out of scope can name the device itself.
NEURON_DEVICE = '"neuron"'
DEFAULT_DEVICE_NOTE = (
    '; "neuron" is the NeuronCore of this process, the device {loader} was given (that variable is not in scope here)'
)
FOUND_MESSAGE = "{loader} removed: the loops over it move each batch to the device, without background prefetch"
NOT_FOUND_MESSAGE = (
    "{loader} removed: move each batch to the device where {name} is iterated, e.g. `batch = batch.to({device})`"
)
REMOVED_MESSAGE = "{loader} removed: batches are no longer moved to the device for you"
UNCLEAR_LOOP_MESSAGE = "move the batch to the device at the top of this loop, e.g. `{example}`; {loader} did it"


# ----- what the file contains ------------------------------------------------------------------


@dataclass
class LoaderSite:
    """A device-loader expression that becomes the plain loader it wraps."""

    rule: str
    call: cst.Call  # the original call replaced by the plain loader
    device: cst.BaseExpression | None
    name: str = ""  # code of the variable it is assigned to
    device_code: str = ""  # the device expression after other rules rewrote it
    loops: list[cst.For] = field(default_factory=list)
    in_loop_header: bool = False


@dataclass
class LoopPlan:
    """A loop over device-loader batches and how to move its batch (``kind`` None = unclear)."""

    node: cst.For
    sites: list[LoaderSite]
    kind: str | None
    names: list[str]
    clear: bool = False  # the shape is known and the device expression is in scope at the loop

    def statement(self, device: str) -> str:
        if self.kind == "mapping":
            name = self.names[0]
            return f"{name} = {{k: v.to({device}) for k, v in {name}.items()}}\n"
        if self.kind == "sequence":
            name = self.names[0]
            return f"{name} = [t.to({device}) for t in {name}]\n"
        targets = ", ".join(self.names)
        values = ", ".join(f"{n}.to({device})" for n in self.names)
        return f"{targets} = {values}\n"


class _Scan(cst.CSTVisitor):
    """One walk over the original tree collecting what the loader rules need."""

    def __init__(self) -> None:
        self.calls: list[cst.Call] = []
        self.fors: list[cst.For] = []
        self.assigned: dict[int, cst.BaseExpression] = {}  # id(target Name) -> value
        self.target_of: dict[int, cst.BaseExpression] = {}  # id(value) -> target
        self.attr_assigned: dict[str, cst.BaseExpression] = {}  # "self.loader" -> value
        self.params: dict[int, tuple[cst.FunctionDef, int | None, str]] = {}
        self.method_class: dict[int, cst.ClassDef] = {}  # id(method) -> its class
        self.self_calls: dict[tuple[int, str], list[cst.Call]] = {}  # (id(class), method) -> self.method(...) calls
        self._stack: list[cst.CSTNode] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._stack.append(node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._stack.pop()

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._stack.pop()

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)
        func = node.func
        classes = [n for n in self._stack if isinstance(n, cst.ClassDef)]
        on_self = isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"
        if classes and on_self:
            self.self_calls.setdefault((id(classes[-1]), func.attr.value), []).append(node)

    def visit_For(self, node: cst.For) -> None:
        self.fors.append(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1:
            self._assign(node.targets[0].target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._assign(node.target, node.value)

    def _assign(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        self.target_of[id(value)] = target
        if isinstance(target, cst.Name):
            self.assigned[id(target)] = value
        elif isinstance(target, cst.Attribute):
            self.attr_assigned[code_of(target)] = value

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._stack and isinstance(self._stack[-1], cst.ClassDef):
            self.method_class[id(node)] = self._stack[-1]
        self._stack.append(node)
        positional = [*node.params.posonly_params, *node.params.params]
        for position, param in enumerate(positional):
            self.params[id(param)] = (node, position, param.name.value)
        for param in node.params.kwonly_params:
            self.params[id(param)] = (node, None, param.name.value)


class FileIndex:
    """Device loaders, the loops over their batches, and serial executors of one file."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.scopes = ctx.wrapper.resolve(ScopeProvider)
        self.qnames = ctx.qualified
        self.scan = _Scan()
        ctx.module.visit(self.scan)
        self.sites: dict[int, LoaderSite] = {}
        self.loops: dict[int, LoopPlan] = {}
        self.done: set[int] = set()
        # ParallelLoader calls: consumed inline by .per_device_loader(), or assigned to a variable
        # only ever used through .per_device_loader() (-> the sites it feeds).
        self.inline_parallel: set[int] = set()
        self.parallel_ok: dict[int, list[LoaderSite]] = {}
        self.executors: set[int] = set()  # id(original .run() call) on an MpSerialExecutor
        self.calls_of: dict[int, list[cst.Call]] = {}
        self._index_calls()
        self._index_loops()

    # ----- name resolution -----
    def referents(self, name: cst.Name) -> list[cst.CSTNode]:
        scope = self.scopes.get(name)
        if scope is None:
            return []
        nodes = []
        for access in scope.accesses[name]:
            if access.node is name:
                nodes.extend(getattr(r, "node", None) for r in access.referents)
        return [n for n in nodes if n is not None]

    def assignment_references(self, target: cst.Name) -> list[cst.CSTNode] | None:
        scope = self.scopes.get(target)
        if scope is None:
            return None
        for assignment in scope.assignments[target.value]:
            if getattr(assignment, "node", None) is target:
                return [access.node for access in assignment.references]
        return None

    def _has(self, call: cst.Call, qname: str) -> bool:
        # Resolved straight from the metadata: the index may be built before the traversal has
        # reached every import of the file.
        return qname in self.qnames.imported(call.func)

    # ----- building -----
    def _index_calls(self) -> None:
        per_device: dict[int, cst.Call] = {}  # id(receiver Name) -> .per_device_loader() call
        parallel = []
        for call in self.scan.calls:
            func = call.func
            if isinstance(func, cst.Name):
                for node in self.referents(func):
                    if isinstance(node, cst.FunctionDef):
                        self.calls_of.setdefault(id(node), []).append(call)
            if isinstance(func, cst.Attribute) and func.attr.value == "per_device_loader":
                inner = func.value
                if isinstance(inner, cst.Call) and self._has(inner, PARALLEL_LOADER):
                    self.inline_parallel.add(id(inner))
                    self._add_site("NM141", call, first_argument(call, "device"))
                elif isinstance(inner, cst.Name):
                    per_device[id(inner)] = call
            elif self._has(call, MP_DEVICE_LOADER):
                args = bind_args(call, ("loader", "device"), other_keywords=True)
                device = args["device"].value if args and "device" in args else None
                self._add_site("NM140", call, device)
            elif self._has(call, PARALLEL_LOADER):
                parallel.append(call)
        for call in parallel:
            if id(call) in self.inline_parallel:
                continue
            target = self.scan.target_of.get(id(call))
            if not isinstance(target, cst.Name):
                continue
            uses = self.assignment_references(target)
            if not uses or any(id(use) not in per_device for use in uses):
                continue
            calls = [per_device[id(use)] for use in uses]
            sites = [self._add_site("NM141", pdl, first_argument(pdl, "device")) for pdl in calls]
            self.parallel_ok[id(call)] = sites
        for call in self.scan.calls:
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "run" and isinstance(func.value, cst.Name):
                for node in self.referents(func.value):
                    value = self.scan.assigned.get(id(node))
                    if isinstance(value, cst.Call) and self._has(value, f"{XMP}.MpSerialExecutor"):
                        self.executors.add(id(call))

    def _add_site(self, rule: str, call: cst.Call, device) -> LoaderSite:
        target = self.scan.target_of.get(id(call))
        site = LoaderSite(rule, call, device, name=code_of(target) if target is not None else "")
        self.sites[id(call)] = site
        return site

    def _index_loops(self) -> None:
        if not self.sites:
            return
        for loop in self.scan.fors:
            source, indexed = _strip_pass_through(loop.iter)
            sites = self._sources(source, 0)
            if not sites:
                continue
            unique = list({id(s): s for s in sites}.values())
            for site in unique:
                site.loops.append(loop)
                if site.call is source:
                    site.in_loop_header = True
            target = loop.target
            if indexed:
                ok = isinstance(target, cst.Tuple) and len(target.elements) == 2
                target = target.elements[1].value if ok else None
            kind, names = _batch_plan(target, loop.body)
            plan = LoopPlan(loop, unique, kind, names)
            plan.clear = kind is not None and all(
                site.device is not None
                and (self._visible(code_of(site.device), loop) or self.is_default_device(site.device, 0))
                for site in unique
            )
            self.loops[id(loop)] = plan

    def _sources(self, expr: cst.BaseExpression, hops: int) -> list[LoaderSite]:
        if hops > MAX_HOPS:
            return []
        if isinstance(expr, cst.Call):
            site = self.sites.get(id(expr))
            return [site] if site else []
        if isinstance(expr, cst.Attribute):
            value = self.scan.attr_assigned.get(code_of(expr))
            return self._sources(value, hops + 1) if value is not None else []
        if not isinstance(expr, cst.Name):
            return []
        found = []
        for node in self.referents(expr):
            value = self.scan.assigned.get(id(node))
            if value is not None:
                found.extend(self._sources(value, hops + 1))
            elif isinstance(node, cst.Param) and id(node) in self.scan.params:
                found.extend(self._through_parameter(node, hops + 1))
        return found

    def _through_parameter(self, param: cst.Param, hops: int) -> list[LoaderSite]:
        """``def run(loader): for b in loader`` called as ``run(device_loader)`` (or a method
        called as ``self.run(self.device_loader)`` from its own class)."""
        function, position, name = self.scan.params[id(param)]
        calls = list(self.calls_of.get(id(function), ()))
        skipped = 0  # arguments the call does not spell out (``self``)
        owner = self.scan.method_class.get(id(function))
        if owner is not None:
            calls += self.scan.self_calls.get((id(owner), function.name.value), [])
            skipped = 1
        found = []
        for call in calls:
            for index, arg in enumerate(call.args):
                if arg.star:
                    break
                named = arg.keyword is not None and arg.keyword.value == name
                if named or (arg.keyword is None and position is not None and index + skipped == position):
                    found.extend(self._sources(arg.value, hops))
        return found

    # ----- at rewrite time -----
    def device_for(self, plan: LoopPlan) -> str | None:
        """The device expression to move this loop's batch to, if one is known and in scope there."""
        codes = set()
        for site in plan.sites:
            if site.device_code:
                codes.add(site.device_code)
            elif site.device is not None and is_plain_reference(site.device):
                codes.add(code_of(site.device))
            else:
                return None
        if len(codes) != 1:
            return None
        device = codes.pop()
        if self._visible(device, plan.node):
            return device
        if all(site.device is not None and self.is_default_device(site.device, 0) for site in plan.sites):
            return NEURON_DEVICE
        return None

    def is_default_device(self, expr: cst.BaseExpression, hops: int) -> bool:
        """Whether ``expr`` is ``xm.xla_device()`` / ``torch_xla.device()`` without an index, or a
        variable that only ever holds one."""
        if isinstance(expr, cst.Call):
            return not expr.args and any(self._has(expr, qname) for qname in XLA_DEVICE_CALLS)
        if not isinstance(expr, cst.Name) or hops > MAX_HOPS:
            return False
        values = [self.scan.assigned.get(id(node)) for node in self.referents(expr)]
        return bool(values) and all(v is not None and self.is_default_device(v, hops + 1) for v in values)

    def _visible(self, code: str, loop: cst.For) -> bool:
        scope = self.scopes.get(loop.iter)
        if scope is None:
            return False
        added = {request.alias or request.module.split(".")[0] for request in self.ctx.imports_needed.values()}
        return all(name in scope or name in added for name in names_in(cst.parse_expression(code)))


def _build_file_index(ctx: FileContext) -> FileIndex | None:
    text = ctx.text
    relevant = any(word in text for word in ("MpDeviceLoader", "ParallelLoader", "MpSerialExecutor"))
    return FileIndex(ctx) if relevant else None


FILE_INDEX = Fact("xla_data", _build_file_index)


def file_index(ctx: FileContext) -> FileIndex | None:
    """The file's loader index, built on first use and only for files that mention a loader."""
    return ctx.fact(FILE_INDEX)


# ----- small helpers ---------------------------------------------------------------------------


def _strip_pass_through(expr: cst.BaseExpression) -> tuple[cst.BaseExpression, bool]:
    indexed = False
    while isinstance(expr, cst.Call) and code_of(expr.func) in PASS_THROUGH and expr.args and not expr.args[0].star:
        indexed = indexed or PASS_THROUGH[code_of(expr.func)]
        expr = expr.args[0].value
    return expr, indexed


class _BatchUses(cst.CSTVisitor):
    """How a loop body uses its batch variable: as a mapping, a sequence, or neither."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.mapping = False
        self.sequence = False

    def _is_batch(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Name) and node.value == self.name

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if not self._is_batch(node.value) or len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            return
        key = node.slice[0].slice.value
        if isinstance(key, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            self.mapping = True
        elif isinstance(key, cst.Integer) or isinstance(getattr(key, "expression", None), cst.Integer):
            self.sequence = True

    def visit_Arg(self, node: cst.Arg) -> None:
        if self._is_batch(node.value):
            self.mapping |= node.star == "**"
            self.sequence |= node.star == "*"

    def visit_StarredDictElement(self, node: cst.StarredDictElement) -> None:
        self.mapping |= self._is_batch(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self._is_batch(node.value) and node.attr.value in ("items", "keys", "values"):
            self.mapping = True

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._is_batch(node.value) and any(isinstance(t.target, (cst.Tuple, cst.List)) for t in node.targets):
            self.sequence = True


def _batch_plan(target: cst.BaseExpression | None, body: cst.BaseSuite) -> tuple[str | None, list[str]]:
    if isinstance(target, cst.Name):
        uses = _BatchUses(target.value)
        body.visit(uses)
        if uses.mapping and uses.sequence:
            return None, []
        kind = "mapping" if uses.mapping else "sequence" if uses.sequence else "tensors"
        return kind, [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        names = []
        for element in target.elements:
            if not isinstance(element, cst.Element) or not isinstance(element.value, cst.Name):
                return None, []
            if element.value.value != "_":
                names.append(element.value.value)
        return ("tensors", names) if names else (None, [])
    return None, []


NO_OP_NOTE = "; the assignment is now a no-op, delete it"


def _self_assignment(site: LoaderSite | None, plain: cst.BaseExpression) -> str:
    """``loader = pl.MpDeviceLoader(loader, device)`` becomes ``loader = loader``: say so."""
    return NO_OP_NOTE if site is not None and site.name and site.name == code_of(plain) else ""


def _insert_first(loop: cst.For, statement: cst.BaseStatement) -> cst.For:
    body = loop.body
    if isinstance(body, cst.SimpleStatementSuite):
        rest = cst.SimpleStatementLine(body=body.body, trailing_whitespace=body.trailing_whitespace)
        return loop.with_changes(body=cst.IndentedBlock(body=[statement, rest]))
    return loop.with_changes(body=body.with_changes(body=[statement, *body.body]))


# ----- loader rules ----------------------------------------------------------------------------


class _DeviceLoaderRule(Rule):
    """Shared by the two loader rules: the loops over a loader's batches get the device move."""

    LOADER = ""

    def leave_For(self, original: cst.For, updated: cst.For):
        index = file_index(self.ctx)
        plan = index.loops.get(id(original)) if index else None
        if plan is None or plan.sites[0].rule != self.meta.id or id(original) in index.done:
            return updated
        index.done.add(id(original))
        if any(self.ctx.is_suppressed(self.meta.id, site.call) for site in plan.sites):
            return updated  # the loader itself stays, and it still moves the batches
        device = index.device_for(plan)
        if device is None or plan.kind is None:
            shown = device or plan.sites[0].device_code or "device"
            example = plan.statement(shown).strip() if plan.kind else f"batch = batch.to({shown})"
            self.ctx.manual(self.meta, original, UNCLEAR_LOOP_MESSAGE.format(example=example, loader=self.LOADER))
            return updated
        note = DEFAULT_DEVICE_NOTE.format(loader=self.LOADER) if device == NEURON_DEVICE else ""
        moved = _insert_first(updated, cst.parse_statement(plan.statement(device)))
        return Edit(moved, review=LOOP_MESSAGE.format(loader=self.LOADER) + note)

    def _site_message(self, site: LoaderSite | None, device: str) -> str:
        index = file_index(self.ctx)
        if site is not None and site.loops and index is not None:
            clear = all(index.loops[id(loop)].clear for loop in site.loops)
            if not clear:
                return REMOVED_MESSAGE.format(loader=self.LOADER)
            return (LOOP_MESSAGE if site.in_loop_header else FOUND_MESSAGE).format(loader=self.LOADER)
        name = f"`{site.name}`" if site is not None and site.name else "it"
        return NOT_FOUND_MESSAGE.format(loader=self.LOADER, name=name, device=device or "device")


# ----- launch ----------------------------------------------------------------------------------

SPAWN_PARAMS = ("fn", "args", "nprocs", "join", "daemon", "start_method")
LAUNCH_PARAMS = ("fn", "args", "start_method", "debug_single_process")
LAUNCHERS = {
    # xmp.spawn passed the global ordinal; torch_xla.launch passed the local rank under torchrun.
    f"{XMP}.spawn": (SPAWN_PARAMS, "RANK"),
    "torch_xla.launch": (LAUNCH_PARAMS, "LOCAL_RANK"),
    "torch_xla.torch_xla.launch": (LAUNCH_PARAMS, "LOCAL_RANK"),
}
