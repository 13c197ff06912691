"""What the xla_step rules share: helpers, constants and base classes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import libcst as cst

from neuron_migrate.migrate.context import FileContext, code_of
from neuron_migrate.rules.base import Fact, Rule
from neuron_migrate.rules.calls import has_params, with_args  # noqa: F401  (re-exported)

DOCS_EAGER = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/about-pytorch-neuron.html"
DOCS_MODULE = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/api/torch-neuron-module.html"
DOCS_DISTRIBUTED = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html"
DOCS_COMPILE = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html"
DOCS_COMPILE_HOWTO = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/how-to-optimize-with-torch-compile.html"
)


# ----- building calls and reading the file -----------------------------------------------------


def source_text(ctx: FileContext) -> str:
    """The file's text, generated once per file and shared by every rule that greps it."""
    return ctx.text


# Gradient averaging is done by one of these wrappers when they wrap the model that steps.
DDP_WRAPPERS = frozenset({"DistributedDataParallel", "DDP"})
# FSDP's gradients are shards: averaging them by hand across ranks would mix different shards.
FSDP_WRAPPERS = frozenset({"fully_shard", "FullyShardedDataParallel", "FSDP"})
DATA_PARALLEL_WRAPPERS = DDP_WRAPPERS | FSDP_WRAPPERS
STEP_NAMES = frozenset({"optimizer_step", "reduce_gradients"})
_BLOCKS = (cst.Module, cst.IndentedBlock, cst.SimpleStatementSuite)


def _called_name(call: cst.Call) -> str:
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


class _DataParallelPaths(cst.CSTVisitor):
    """Where the wrapper calls and the stepping calls are: the blocks around each, outermost first."""

    def __init__(self) -> None:
        self.blocks: list[int] = []
        self.order = 0
        # id(stepping call) -> (position in the file, enclosing blocks)
        self.steps: dict[int, tuple[int, tuple[int, ...]]] = {}
        self.wrappers: list[tuple[int, tuple[int, ...]]] = []
        self.fsdp = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, _BLOCKS):
            self.blocks.append(id(node))
        elif isinstance(node, cst.Call):
            self.order += 1
            name = _called_name(node)
            if name in DATA_PARALLEL_WRAPPERS:
                self.wrappers.append((self.order, tuple(self.blocks)))
                self.fsdp = self.fsdp or name in FSDP_WRAPPERS
            elif name in STEP_NAMES:
                self.steps[id(node)] = (self.order, tuple(self.blocks))
        return True

    def on_leave(self, original: cst.CSTNode) -> None:
        if isinstance(original, _BLOCKS):
            self.blocks.pop()

    def wrapped(self, call: cst.Call) -> bool:
        """A wrapper call runs before ``call`` on every path to it: earlier in the file, in the same
        block or one around it (so not in another function, nor under an ``if`` of its own)."""
        if id(call) not in self.steps:
            return False
        order, blocks = self.steps[id(call)]
        return any(at < order and blocks[: len(around)] == around for at, around in self.wrappers)


def _find_data_parallel_paths(ctx: FileContext) -> _DataParallelPaths:
    paths = _DataParallelPaths()
    ctx.module.visit(paths)
    return paths


DATA_PARALLEL_PATHS = Fact("data_parallel", _find_data_parallel_paths)


def data_parallel_paths(ctx: FileContext) -> _DataParallelPaths:
    return ctx.fact(DATA_PARALLEL_PATHS)


def data_parallel_reaches(ctx: FileContext, call: cst.Call) -> bool:
    """Whether DDP/FSDP wraps the model on every code path to ``call`` (see ``_DataParallelPaths``)."""
    if not any(word in source_text(ctx) for word in DATA_PARALLEL_WRAPPERS):
        return False
    return data_parallel_paths(ctx).wrapped(call)


def fsdp_visible(ctx: FileContext) -> bool:
    if not any(word in source_text(ctx) for word in FSDP_WRAPPERS):
        return False
    return data_parallel_paths(ctx).fsdp


# ----- unwrapping context managers that no longer do anything ----------------------------------


def unwrap_with(rule: Rule, original: cst.With, updated: cst.With, names: set[str] | frozenset[str]):
    """Drop the ``with`` items whose callee is in ``names``; with none left, splice the body into
    the enclosing block. Returns ``updated`` unchanged when nothing matched."""
    ctx = rule.ctx
    drop = []
    for position, item in enumerate(original.items):
        call = item.item
        if isinstance(call, cst.Call) and ctx.any_qualified_name(call.func, names):
            drop.append(position)
    if not drop:
        return updated
    if any(original.items[p].asname is not None for p in drop):
        step = "the context object is used (`as ...`); remove the `with` line, dedent its body by hand"
        ctx.manual(rule.meta, original, step)
        return updated
    keep = [item for p, item in enumerate(updated.items) if p not in drop]
    if keep:
        keep[-1] = keep[-1].with_changes(comma=updated.items[-1].comma)
        return updated.with_changes(items=keep)
    body = updated.body
    if isinstance(body, cst.IndentedBlock) and any(line.comment for line in body.footer):
        # Comments after the last statement of the block have no statement to travel with.
        ctx.manual(
            rule.meta, original, "remove the `with` line and dedent its body by hand (trailing comments kept it)"
        )
        return updated
    if isinstance(body, cst.SimpleStatementSuite):
        statements: list[cst.BaseStatement] = [
            cst.SimpleStatementLine(body=body.body, trailing_whitespace=body.trailing_whitespace)
        ]
        header = None
    else:
        statements = list(body.body)
        header = body.header.comment
    lead = list(updated.leading_lines)
    if header is not None:
        lead.append(cst.EmptyLine(comment=header))
    statements[0] = statements[0].with_changes(leading_lines=[*lead, *statements[0].leading_lines])
    return cst.FlattenSentinel(statements)


STEP_CONTEXTS = frozenset({"torch_xla.step", "torch_xla.torch_xla.step"})
OPTIMIZER_STEP_PARAMS = ("optimizer", "barrier", "optimizer_args", "groups", "pin_layout")
REDUCE_GRADIENTS_PARAMS = ("optimizer", "groups", "pin_layout")
AVERAGE_GRADIENTS = "_average_gradients"
# What xm.reduce_gradients did (xla_model.py): sum every gradient of the optimizer's param groups
# over the ranks and scale it by 1 / world size; nothing with one rank.
AVERAGE_GRADIENTS_DEF = """\
def {name}(optimizer):
    \"\"\"Average the gradients over the ranks, as xm.optimizer_step did before the step.\"\"\"
    if not {dist}.is_initialized() or {dist}.get_world_size() == 1:
        return
    scale = 1.0 / {dist}.get_world_size()
    for group in optimizer.param_groups:
        for param in group["params"]:
            if param.grad is not None:
                {dist}.all_reduce(param.grad)
                param.grad.mul_(scale)
"""
AVERAGED = (
    "gradients averaged by hand, as xm.optimizer_step did; DistributedDataParallel does it faster "
    "(then drop the {name} call)"
)
NO_PROCESS_GROUP = '; needs `dist.init_process_group("neuron")` at start-up, else each rank trains alone'


# The process-group rules (rules/xla_distributed, built on this module) know whether a file starts a
# process group; they hand that check over here when they are imported.
_PROCESS_GROUP_CHECKS: list[Callable[[FileContext], bool]] = []


def answer_process_group_planned(check: Callable[[FileContext], bool]) -> Callable[[FileContext], bool]:
    _PROCESS_GROUP_CHECKS[:] = [check]
    return check


def process_group_planned(ctx: FileContext) -> bool:
    """Whether the migrated file initialises a process group: it calls init_process_group, or it
    launched its workers with xmp.spawn / torch_xla.launch, whose rewrite initialises one."""
    return any(check(ctx) for check in _PROCESS_GROUP_CHECKS)


STEP_CLOSURE_PARAMS = ("closure", "args", "run_async")


class _Substitute(cst.CSTTransformer):
    """Replace parameter names by argument expressions (attribute names and keywords untouched)."""

    def __init__(self, values: dict[str, cst.BaseExpression]) -> None:
        super().__init__()
        self.values = values

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return self.values.get(updated.value, updated)

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)


class _Scopes(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.found = True

    def visit_ListComp(self, node) -> None:
        self.found = True

    visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_NamedExpr = visit_ListComp


def inline_lambda(closure: cst.Lambda, args: cst.Arg | None) -> cst.BaseExpression | None:
    """The body of ``(lambda a, b: body)(x, y)`` with the arguments put in, when that is plainly
    the same: simple parameters, argument names or constants, and no nested scope in the body."""
    if not has_params(closure):
        return closure.body if args is None or _empty_sequence(args.value) else None
    params = closure.params
    if params.posonly_params or params.kwonly_params or params.star_kwarg or isinstance(params.star_arg, cst.Param):
        return None
    if args is None:
        elements: Sequence[cst.BaseElement] = ()
    elif isinstance(args.value, (cst.Tuple, cst.List)):
        elements = args.value.elements
    else:
        return None
    if len(elements) > len(params.params):
        return None
    values = {}
    for position, param in enumerate(params.params):
        # `lambda s=step: ...` captured `step` when it was made; called at once, that is `step` itself.
        if position < len(elements):
            element = elements[position]
            value = element.value if isinstance(element, cst.Element) else None
        else:
            value = param.default
        if value is None or not _is_simple(value):
            return None
        values[param.name.value] = value
    nested = _Scopes()
    closure.body.visit(nested)
    if nested.found:
        return None
    return closure.body.visit(_Substitute(values))


def _empty_sequence(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Tuple, cst.List)) and not node.elements


def _is_simple(node: cst.BaseExpression) -> bool:
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, (cst.Name, cst.Integer, cst.Float, cst.SimpleString))


EAGER_CONTEXTS = frozenset(
    {"torch_xla.experimental.eager_mode_context", "torch_xla.experimental.eager.eager_mode_context"}
)
# What a compiled function does that dynamo cannot keep in one graph: each is a graph break, so
# `fullgraph=True` makes torch.compile raise before the backend sees anything. XLA's compile took a
# whole training step; torch.compile takes it too, split into graphs around these.
STEP_METHODS = {
    "backward": "runs backward",
    "zero_grad": "zeroes gradients",
    "step": "steps the optimizer",
    "optimizer_step": "steps the optimizer",
}
STEP_FUNCTIONS = {"print": "prints", "next": "pulls a batch"}
# An iterable whose code names one of these is a data loader, not a list of layers.
LOADER_WORDS = ("loader", "dataset", "batches")


class _StepCode(cst.CSTVisitor):
    """What in a function body makes it a training step rather than a pure forward, in first-seen order."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def _add(self, what: str) -> None:
        if what not in self.found:
            self.found.append(what)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in STEP_METHODS:
            self._add(STEP_METHODS[func.attr.value])
        elif isinstance(func, cst.Name) and func.value in STEP_FUNCTIONS:
            self._add(STEP_FUNCTIONS[func.value])

    def visit_For(self, node: cst.For) -> None:
        if any(word in code_of(node.iter).lower() for word in LOADER_WORDS):
            self._add("iterates a data loader")


def step_code(node: cst.CSTNode) -> list[str]:
    finder = _StepCode()
    node.visit(finder)
    return finder.found


class _Functions(cst.CSTVisitor):
    """Every ``def`` of the file by name, and the function each decorator expression decorates."""

    def __init__(self) -> None:
        super().__init__()
        self.by_name: dict[str, list[cst.FunctionDef]] = {}
        self.decorated: dict[int, cst.FunctionDef] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.by_name.setdefault(node.name.value, []).append(node)
        for decorator in node.decorators:
            self.decorated[id(decorator.decorator)] = node


def _find_functions(ctx: FileContext) -> _Functions:
    finder = _Functions()
    ctx.module.visit(finder)
    return finder


FILE_FUNCTIONS = Fact("compile_functions", _find_functions)


def file_functions(ctx: FileContext) -> _Functions:
    return ctx.fact(FILE_FUNCTIONS)


def compiled_bodies(ctx: FileContext, target: cst.BaseExpression) -> list[cst.CSTNode]:
    """The code ``target`` runs when it is a lambda, a ``def`` of this file or a method of a class in
    it (``self.step_fn``, ``Trainer.step_fn``); empty when it cannot be told."""
    if isinstance(target, cst.Lambda):
        return [target.body]
    name = None
    if isinstance(target, cst.Name):
        name = target.value
    elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
        name = target.attr.value
    return list(file_functions(ctx).by_name.get(name, [])) if name else []


XLA_COMPILE = frozenset({"torch_xla.compile", "torch_xla.torch_xla.compile"})
XLA_COMPILE_PARAMS = ("f", "full_graph", "name", "max_different_graphs", "num_different_graphs_allowed")
XLA_DYNAMO_BACKENDS = ("openxla", "openxla_eval")
