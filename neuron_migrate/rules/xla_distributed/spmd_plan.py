"""Which SPMD sites of a file become a DeviceMesh and a tensor-parallel plan (NM137), and which stay
with a next step (NM135).

A GSPMD program annotates tensors with ``xs.mark_sharding(t, mesh, spec)`` and runs one process over
every device; the compiler inserts the collectives. The native counterpart is one process per
NeuronCore under torchrun, a ``DeviceMesh`` over those processes and DTensor parallel styles. The
plain, common case migrates mechanically: a Linear weight split along one mesh axis,

    mesh = xs.Mesh(np.arange(n), (n,), ("model",))            mesh = init_device_mesh("neuron", (n,), ...)
    xs.mark_sharding(fc.weight, mesh, ("model", None))   ->   parallelize_module(fc, mesh, ColwiseParallel(...))

with the layer's output gathered whole (``output_layouts=Replicate()``), which is what the rest of a
GSPMD program saw. A mesh is migrated only with every use of it (a legacy call handed a DeviceMesh
would break), and ``xr.use_spmd()`` only when nothing else of SPMD is left in the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import ScopeProvider

from neuron_migrate.migrate.context import code_of
from neuron_migrate.migrate.walk import walk
from neuron_migrate.rules.base import Fact
from neuron_migrate.rules.calls import UNKNOWN, bind_args, literal
from neuron_migrate.rules.tables.xla_distributed import SPMD_MODULES, SPMD_NAMES, XR
from neuron_migrate.rules.xla_data.common import MP_DEVICE_LOADER, PARALLEL_LOADER

MESH_PARAMS = ("device_ids", "mesh_shape", "axis_names")
MARK_PARAMS = ("t", "mesh", "partition_spec")
ONE_D_PARAMS = ("axis_name",)
USE_SPMD = f"{XR}.use_spmd"
# Every name of the SPMD modules the tables answer, and the runtime switches.
SPMD_QNAMES = frozenset(
    {f"{module}.{name}" for module in SPMD_MODULES for name in SPMD_NAMES} | {USE_SPMD, f"{XR}.is_spmd"}
)
IDENTITY_ORDERS = frozenset({"numpy.arange"})

# Next steps for the sites left to a human, by what the sharded tensor is.
PARAMETER_STEP = (
    'on `init_device_mesh("neuron", ...)`: a Linear weight split on dim 0 is `parallelize_module(layer, mesh, '
    "ColwiseParallel(output_layouts=Replicate()))`, on dim 1 `RowwiseParallel(input_layouts=Replicate())`; every "
    "parameter split on dim 0 over one axis is FSDP, `fully_shard(model, mesh=mesh)`; any other: "
    "`distribute_tensor(p, mesh, placements)`, `Shard(i)` on each mesh dim the spec names for tensor dim i"
)
TENSOR_STEP = (
    "an input or activation: under torchrun each rank holds its own part, so give each rank its slice of the "
    "batch (DistributedSampler, or `x.chunk(world_size)[rank]`) and wrap the model in DDP or `fully_shard`; "
    "a DTensor model takes `distribute_tensor(x, mesh, placements)` instead"
)


@dataclass
class MeshSite:
    """``name = xs.Mesh(...)`` (or ``xs.get_1d_mesh(...)``) and what the DeviceMesh is built from."""

    call: cst.Call
    target: cst.Name
    shape: str  # code of the mesh shape; empty for get_1d_mesh (the world size)
    names: tuple[str, ...] | None  # axis names, when the code spells them
    sizes: tuple[int | None, ...] | None  # axis sizes the code spells (None where it does not)

    @property
    def ndim(self) -> int | None:
        if self.names is not None:
            return len(self.names)
        return None if self.sizes is None else len(self.sizes)


@dataclass
class Sharding:
    """A mark_sharding call that becomes a tensor-parallel style on one Linear layer."""

    call: cst.Call
    mesh: MeshSite
    layer: str  # code of the module whose weight is sharded
    dim: int  # the weight's sharded dimension: 0 output features, 1 input features
    axis: int  # the mesh axis it is split over
    parameter_name: str = ""  # the loop variable naming the weight, when found through named_parameters()


@dataclass
class SpmdPlan:
    meshes: dict[int, MeshSite] = field(default_factory=dict)  # id(call) -> mesh built natively
    shardings: dict[int, Sharding] = field(default_factory=dict)  # id(call) -> style applied
    use_spmd: set[int] = field(default_factory=set)  # ids of the use_spmd() calls that go
    # ids of ShardingSpec calls given as input_sharding= to a device loader NM140 removes
    dropped: set[int] = field(default_factory=set)
    steps: dict[int, str] = field(default_factory=dict)  # id(call) -> next step of a site left as is

    def handles(self, call: cst.CSTNode) -> bool:
        return id(call) in self.meshes or id(call) in self.shardings or id(call) in self.use_spmd


class _Survey(cst.CSTVisitor):
    """One read-only pass: assignments, bare call statements, SPMD calls and every SPMD name used."""

    def __init__(self, ctx) -> None:
        super().__init__()
        self.ctx = ctx
        self.values: dict[int, cst.BaseExpression] = {}  # id(assigned Name) -> value
        self.targets: dict[int, cst.Name] = {}  # id(value) -> the Name it is assigned to
        self.bare: set[int] = set()  # ids of calls that are a whole statement
        self.calls: list[tuple[cst.Call, str]] = []  # SPMD calls and their qualified name
        self.references: list[cst.CSTNode] = []  # every node naming an SPMD API
        self.loader_specs: set[int] = set()  # ids of input_sharding= values of device loaders
        # id of the parameter Name a `for name, param in model.named_parameters():` binds -> (name, model)
        self.parameter_loops: dict[int, tuple[str, str]] = {}

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            self.values[id(node.targets[0].target)] = node.value
            self.targets[id(node.value)] = node.targets[0].target

    def visit_For(self, node: cst.For) -> None:
        target, loop = node.target, node.iter
        if not (isinstance(target, cst.Tuple) and len(target.elements) == 2 and isinstance(loop, cst.Call)):
            return
        name, param = (element.value for element in target.elements)
        func = loop.func
        if (
            isinstance(name, cst.Name)
            and isinstance(param, cst.Name)
            and isinstance(func, cst.Attribute)
            and func.attr.value == "named_parameters"
            and not loop.args
            and _module_path(func.value)
        ):
            self.parameter_loops[id(param)] = (name.value, code_of(func.value))

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if len(node.body) == 1 and isinstance(node.body[0], cst.Expr) and isinstance(node.body[0].value, cst.Call):
            self.bare.add(id(node.body[0].value))

    def visit_Call(self, node: cst.Call) -> None:
        names = self.ctx.qualified_names(node.func)
        spmd = sorted(names & SPMD_QNAMES)
        if spmd:
            self.calls.append((node, spmd[0]))
        if names & {MP_DEVICE_LOADER, PARALLEL_LOADER}:
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "input_sharding":
                    self.loader_specs.add(id(arg.value))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self.ctx.qualified_names(node) & SPMD_QNAMES:
            self.references.append(node)

    def visit_Name(self, node: cst.Name) -> None:
        if self.ctx.qualified_names(node) & SPMD_QNAMES:
            self.references.append(node)


class _Planner:
    def __init__(self, ctx, survey: _Survey) -> None:
        self.ctx = ctx
        self.survey = survey
        self.scopes = ctx.wrapper.resolve(ScopeProvider)
        self.plan = SpmdPlan()

    # ----- reading values ------------------------------------------------------------------------
    def value_of(self, node: cst.BaseExpression | None) -> cst.BaseExpression | None:
        """``node`` itself, or for a name assigned exactly once (in its own scope) the value it was given."""
        if not isinstance(node, cst.Name):
            return node
        scope = self.scopes.get(node)
        if scope is None:
            return None
        assignments = list(scope[node.value])
        if len(assignments) != 1:
            return None
        return self.survey.values.get(id(getattr(assignments[0], "node", None)))

    def constant(self, node: cst.BaseExpression | None):
        return literal(self.value_of(node))

    def identity_order(self, node: cst.BaseExpression | None) -> bool:
        """``np.arange(n)``, ``np.array(range(n))``, ``list(range(n))``, ``range(n)``: devices in rank order."""
        node = self.value_of(node)
        if not isinstance(node, cst.Call) or not node.args or any(arg.keyword or arg.star for arg in node.args):
            return False
        names = self.ctx.qualified.imported(node.func)
        func = code_of(node.func)
        if names & IDENTITY_ORDERS:
            first = literal(node.args[0].value)
            return len(node.args) == 1 or (len(node.args) == 2 and first == 0)
        if names & {"numpy.array", "numpy.asarray"} or func in ("list", "tuple"):
            return len(node.args) == 1 and self.identity_order(node.args[0].value)
        if func == "range":
            first = literal(node.args[0].value)
            return len(node.args) == 1 or (len(node.args) == 2 and first == 0)
        return False

    # ----- meshes ------------------------------------------------------------------------------
    def mesh_site(self, call: cst.Call, qname: str) -> MeshSite | None:
        line_value = self._assigned_name(call)
        if line_value is None:
            return None
        if qname.endswith(".get_1d_mesh"):
            bound = bind_args(call, ONE_D_PARAMS)
            name = literal(bound["axis_name"].value) if bound and "axis_name" in bound else None
            if bound is None or not (name is None or isinstance(name, str)):
                return None
            return MeshSite(call, line_value, "", None if name is None else (name,), (None,))
        bound = bind_args(call, MESH_PARAMS)
        if bound is None or "device_ids" not in bound or "mesh_shape" not in bound:
            return None
        if not self.identity_order(bound["device_ids"].value):
            return None
        names = self.constant(bound["axis_names"].value) if "axis_names" in bound else None
        if names is UNKNOWN or not (names is None or _all_strings(names)):
            return None
        shape = self.value_of(bound["mesh_shape"].value)
        sizes = None
        if isinstance(shape, (cst.Tuple, cst.List)):
            sizes = tuple(_int_or_none(element.value) for element in shape.elements)
        names = None if names is None else tuple(names)
        if names is not None and sizes is not None and len(names) != len(sizes):
            return None
        return MeshSite(call, line_value, code_of(bound["mesh_shape"].value), names, sizes)

    def _assigned_name(self, call: cst.Call) -> cst.Name | None:
        """The Name a statement ``name = call`` binds, when it is bound nowhere else in its scope."""
        target = self.survey.targets.get(id(call))
        scope = self.scopes.get(target) if target is not None else None
        if scope is None or len(scope.assignments[target.value]) != 1:
            return None
        return target

    # ----- mark_sharding ---------------------------------------------------------------------------
    def sharding(self, call: cst.Call, meshes: dict[int, MeshSite]) -> Sharding | str:
        """The style for a ``mark_sharding`` call, or the next step when it stays."""
        bound = bind_args(call, MARK_PARAMS)
        if bound is None or len(bound) != 3:
            return PARAMETER_STEP
        tensor = bound["t"].value
        layer, parameter_name = self._layer_of(tensor)
        looks_like_parameter = any(word in code_of(tensor).lower() for word in ("weight", "bias", "param"))
        step = PARAMETER_STEP if looks_like_parameter else TENSOR_STEP
        mesh = self._mesh_of(bound["mesh"].value, meshes)
        if not layer or mesh is None or id(call) not in self.survey.bare:
            return step
        spec = self.constant(bound["partition_spec"].value)
        if not isinstance(spec, (tuple, list)) or len(spec) != 2:
            return step
        split = [(dim, axis) for dim, entry in enumerate(spec) if (axis := _axis(entry, mesh)) is not None]
        if any(axis == -1 for _, axis in split) or len(split) != 1:
            return step
        dim, axis = split[0]
        if mesh.ndim is None or (mesh.ndim > 1 and mesh.names is None):
            return step
        return Sharding(call, mesh, layer, dim, axis, parameter_name)

    def _layer_of(self, tensor: cst.BaseExpression) -> tuple[str, str]:
        """The code of the module a weight belongs to: ``fc`` for ``fc.weight``, and for the parameter of a
        ``for name, param in model.named_parameters():`` loop the submodule its name leads to."""
        if isinstance(tensor, cst.Attribute) and tensor.attr.value == "weight" and _module_path(tensor.value):
            return code_of(tensor.value), ""
        if not isinstance(tensor, cst.Name):
            return "", ""
        scope = self.scopes.get(tensor)
        assignments = list(scope[tensor.value]) if scope is not None else []
        loop = self.survey.parameter_loops.get(id(assignments[0].node)) if len(assignments) == 1 else None
        if loop is None:
            return "", ""
        name, model = loop
        return f'{model}.get_submodule({name}.rpartition(".")[0])', name

    def _mesh_of(self, node: cst.BaseExpression, meshes: dict[int, MeshSite]) -> MeshSite | None:
        if not isinstance(node, cst.Name):
            return None
        scope = self.scopes.get(node)
        assignments = list(scope[node.value]) if scope is not None else []
        if len(assignments) != 1:
            return None
        for mesh in meshes.values():
            if assignments[0].node is mesh.target:
                return mesh
        return None

    # ----- the whole file ------------------------------------------------------------------------
    def build(self) -> SpmdPlan:
        candidates: dict[int, MeshSite] = {}
        marks: list[cst.Call] = []
        for call, qname in self.survey.calls:
            leaf = qname.rsplit(".", 1)[1]
            if leaf in ("Mesh", "get_1d_mesh"):
                site = self.mesh_site(call, qname)
                if site is not None:
                    candidates[id(call)] = site
            elif leaf == "mark_sharding":
                marks.append(call)
            elif leaf == "ShardingSpec" and id(call) in self.survey.loader_specs:
                self.plan.dropped.add(id(call))
        shardings: dict[int, Sharding] = {}
        for call in marks:
            result = self.sharding(call, candidates)
            if isinstance(result, Sharding):
                shardings[id(call)] = result
            else:
                self.plan.steps[id(call)] = result
        for mesh_id, mesh in candidates.items():
            mine = [s for s in shardings.values() if s.mesh is mesh]
            if self._only_used_by(mesh, mine):
                self.plan.meshes[mesh_id] = mesh
                self.plan.shardings.update((id(s.call), s) for s in mine)
        for call_id, sharding in list(shardings.items()):
            if call_id not in self.plan.shardings:
                self.plan.steps[call_id] = PARAMETER_STEP
        self._use_spmd()
        return self.plan

    def _only_used_by(self, mesh: MeshSite, shardings: list[Sharding]) -> bool:
        """Is every read of the mesh's name the mesh argument of one of these calls, or of an
        ``input_sharding=`` spec that goes with its loader?"""
        allowed = {id(bind_args(s.call, MARK_PARAMS)["mesh"].value) for s in shardings}
        for call, _ in self.survey.calls:
            if id(call) in self.plan.dropped and call.args:
                allowed.add(id(call.args[0].value))
        scope = self.scopes.get(mesh.target)
        if scope is None:
            return False
        [assignment] = scope.assignments[mesh.target.value]
        return all(id(access.node) in allowed for access in assignment.references)

    def _use_spmd(self) -> None:
        """``xr.use_spmd()`` goes when nothing else of SPMD is left in the file."""
        uses = [call for call, qname in self.survey.calls if qname == USE_SPMD]
        plan = self.plan
        handled = {id(call.func) for call, _ in self.survey.calls if plan.handles(call) or id(call) in plan.dropped}
        handled.update(id(call.func) for call in uses)
        if any(id(node) not in handled for node in self.survey.references):
            return
        for call in uses:
            if not call.args and id(call) in self.survey.bare:
                self.plan.use_spmd.add(id(call))


def _module_path(node: cst.BaseExpression) -> bool:
    """``model.fc``, ``layer``, ``model.layers[0].mlp``, ``model[2]``: a module named without side effects."""
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        if isinstance(node, cst.Subscript):
            if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
                return False
            if not isinstance(node.slice[0].slice.value, (cst.Integer, cst.SimpleString, cst.Name)):
                return False
        node = node.value
    return isinstance(node, cst.Name)


def _all_strings(values) -> bool:
    return isinstance(values, (tuple, list)) and all(isinstance(v, str) for v in values)


def _int_or_none(node: cst.BaseExpression) -> int | None:
    value = literal(node)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _axis(entry, mesh: MeshSite) -> int | None:
    """The mesh axis a spec entry splits over; None when it splits nothing (None, or an axis of size 1),
    -1 when it cannot be read (several axes, an unknown name)."""
    if entry is None:
        return None
    if isinstance(entry, str):
        if mesh.names is None or entry not in mesh.names:
            return -1
        axis = mesh.names.index(entry)
    elif isinstance(entry, int) and not isinstance(entry, bool):
        axis = entry
        if mesh.ndim is not None and not 0 <= axis < mesh.ndim:
            return -1
    else:
        return -1
    if mesh.sizes is not None and axis < len(mesh.sizes) and mesh.sizes[axis] == 1:
        return None
    return axis


def _plan(ctx) -> SpmdPlan:
    if "spmd" not in ctx.text and "xla_sharding" not in ctx.text:
        return SpmdPlan()
    survey = _Survey(ctx)
    walk(ctx.module, survey)
    if not survey.calls:
        return SpmdPlan()
    return _Planner(ctx, survey).build()


SPMD_PLAN = Fact("spmd_plan", _plan)


def spmd_plan(ctx) -> SpmdPlan:
    return ctx.fact(SPMD_PLAN)
