"""Stepping: the lazy-tensor graph cut points of PyTorch/XLA have no meaning in eager TorchNeuron.

``xm.mark_step()`` cut and launched the pending XLA graph. TorchNeuron runs eagerly (ops are
queued and fused adaptively) and ``torch.compile`` regions bound graphs, so the call goes away;
where a caller waited for the device, ``torch.neuron.synchronize()`` does that.

``source_text`` is shared with the data-loading and launch rules.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import libcst as cst

from neuron_migrate.migrate.context import FileContext, code_of
from neuron_migrate.rules.base import REVIEW, SAFE, Example, Rule, RuleMeta, StatementReplacement, register
from neuron_migrate.rules.calls import (
    UNKNOWN,
    arg_value,
    bind_args,
    has_params,
    is_plain_reference,
    literal,
    new_keyword,
    receiver,
    spread_arguments,
)
from neuron_migrate.rules.tables.xla_step import ROWS

DOCS_EAGER = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/about-pytorch-neuron.html"
DOCS_MODULE = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/api/torch-neuron-module.html"
DOCS_DISTRIBUTED = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html"
DOCS_COMPILE = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html"
DOCS_COMPILE_HOWTO = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/how-to-optimize-with-torch-compile.html"
)

# ----- building calls and reading the file -----------------------------------------------------


def with_args(call: cst.Call, args: list[cst.Arg]) -> cst.Call:
    """``call`` with a new argument list, keeping its one-line or one-argument-per-line layout. A kept
    argument keeps the comment at the end of its line (``# noqa``); a new one gets a line of its own."""
    old = list(call.args)
    # The last argument's comma (if any) and trailing whitespace lead to the closing parenthesis.
    closing = old[-1].comma if old else cst.MaybeSentinel.DEFAULT
    tail = old[-1].whitespace_after_arg if old else cst.SimpleWhitespace("")
    # Between arguments: the first separator, without the comments that belong to its argument.
    sep = next((arg.comma for arg in old[:-1] if isinstance(arg.comma, cst.Comma)), None)
    if sep is None:
        sep = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    elif isinstance(sep.whitespace_after, cst.ParenthesizedWhitespace):
        sep = sep.with_changes(
            whitespace_after=sep.whitespace_after.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
        )
    out = []
    for position, arg in enumerate(args):
        if position == len(args) - 1:
            comma = closing if arg.comma is closing else _with_line_comment(closing, _line_comment(arg))
            out.append(arg.with_changes(comma=comma, whitespace_after_arg=tail))
        elif isinstance(arg.comma, cst.Comma) and arg.comma is not closing:
            out.append(arg)
        else:
            comma = _with_line_comment(sep, _line_comment(arg))
            out.append(arg.with_changes(comma=comma, whitespace_after_arg=cst.SimpleWhitespace("")))
    return call.with_changes(args=out)


def _line_comment(arg: cst.Arg) -> cst.TrailingWhitespace:
    """The end of ``arg``'s line in a one-argument-per-line call (its comment, if any)."""
    after = arg.comma.whitespace_after if isinstance(arg.comma, cst.Comma) else None
    return after.first_line if isinstance(after, cst.ParenthesizedWhitespace) else cst.TrailingWhitespace()


def _with_line_comment(comma, line: cst.TrailingWhitespace):
    """``comma`` (a separator or the closing comma) ending its line with ``line`` instead."""
    if not isinstance(comma, cst.Comma) or not isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace):
        return comma
    return comma.with_changes(whitespace_after=comma.whitespace_after.with_changes(first_line=line))


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


def data_parallel_paths(ctx: FileContext) -> _DataParallelPaths:
    if "data_parallel" not in ctx.facts:
        paths = _DataParallelPaths()
        ctx.module.visit(paths)
        ctx.facts["data_parallel"] = paths
    return ctx.facts["data_parallel"]  # type: ignore[return-value]


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
        ctx.manual(original, "the context object is used (`as ...`); remove the `with` line, dedent its body by hand")
        return updated
    keep = [item for p, item in enumerate(updated.items) if p not in drop]
    if keep:
        keep[-1] = keep[-1].with_changes(comma=updated.items[-1].comma)
        return updated.with_changes(items=keep)
    body = updated.body
    if isinstance(body, cst.IndentedBlock) and any(line.comment for line in body.footer):
        # Comments after the last statement of the block have no statement to travel with.
        ctx.manual(original, "remove the `with` line and dedent its body by hand (trailing comments kept it)")
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


# ----- rules -----------------------------------------------------------------------------------


@register
class MarkStepRemoval(Rule):
    meta = RuleMeta(
        "NM110",
        "xm.mark_step() / torch_xla.sync() removed",
        safety=SAFE,
        summary=(
            "TorchNeuron executes eagerly; there is no lazy graph to cut. A call that waited for the "
            "device (`wait=True`) becomes torch.neuron.synchronize()."
        ),
        docs=(DOCS_EAGER, DOCS_MODULE),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "for batch in loader:\n"
                "    loss = model(batch).sum()\n"
                "    loss.backward()\n"
                "    xm.mark_step()\n"
            ),
            after=(
                "for batch in loader:\n"
                "    loss = model(batch).sum()\n"
                "    loss.backward()\n"
            ),
        ),
    )
    calls = {
        "torch_xla.core.xla_model.mark_step": "remove",
        "torch_xla.sync": "remove",
        "torch_xla.torch_xla.sync": "remove",
    }

    def remove(self, original: cst.Call, updated: cst.Call, qname: str):
        args = bind_args(updated, ("wait", "reset_scope"))
        if args is not None and arg_value(args, "wait") is True:
            # A blocking step was a timing or hand-off point: keep the wait, drop the graph cut.
            torch = self.ctx.require_import("torch")
            self.ctx.note("blocking graph cut replaced by torch.neuron.synchronize()")
            return self.ctx.expr(f"{torch}.neuron.synchronize()")
        return StatementReplacement([], fallback="drop the call; eager TorchNeuron has no graph to cut")


STEP_CONTEXTS = frozenset({"torch_xla.step", "torch_xla.torch_xla.step"})


@register
class StepContextRemoval(Rule):
    """``with torch_xla.step():`` bounded one lazy graph; eager code needs no such scope."""

    meta = RuleMeta(
        "NM111",
        "`with torch_xla.step():` unwrapped",
        safety=SAFE,
        summary="TorchNeuron executes eagerly; the body of the step block runs as ordinary code.",
        docs=(DOCS_EAGER,),
        example=Example(
            before=(
                "import torch_xla\n\n"
                "for batch in loader:\n"
                "    with torch_xla.step():\n"
                "        loss = model(batch).sum()\n"
                "        loss.backward()\n"
            ),
            after=(
                "for batch in loader:\n"
                "    loss = model(batch).sum()\n"
                "    loss.backward()\n"
            ),
        ),
    )

    def leave_With(self, original: cst.With, updated: cst.With):
        return unwrap_with(self, original, updated, STEP_CONTEXTS)


@register
class WaitDeviceOps(Rule):
    meta = RuleMeta(
        "NM112",
        "xm.wait_device_ops() -> torch.neuron.synchronize()",
        safety=SAFE,
        summary="torch.neuron.synchronize() waits for all queued work on the device.",
        docs=(DOCS_MODULE,),
        example=Example(
            before=(
                "import time\n"
                "import torch_xla.core.xla_model as xm\n\n"
                "start = time.time()\n"
                "run_epoch()\n"
                "xm.wait_device_ops()\n"
                "print(time.time() - start)\n"
            ),
            after=(
                "import time\n"
                "import torch\n\n"
                "start = time.time()\n"
                "run_epoch()\n"
                "torch.neuron.synchronize()\n"
                "print(time.time() - start)\n"
            ),
        ),
    )
    calls = {"torch_xla.core.xla_model.wait_device_ops": "synchronize"}

    def synchronize(self, original: cst.Call, updated: cst.Call, qname: str):
        torch = self.ctx.require_import("torch")
        return self.ctx.expr(f"{torch}.neuron.synchronize()")


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


def process_group_planned(ctx: FileContext) -> bool:
    """Whether the migrated file initialises a process group: it calls init_process_group, or it
    launched its workers with xmp.spawn / torch_xla.launch, whose rewrite initialises one."""
    # xla_distributed reaches this module through xla_data, so it is imported here, not at the top.
    from neuron_migrate.rules.xla_distributed import initialises_process_group

    return initialises_process_group(ctx)


@register
class OptimizerStep(Rule):
    """``xm.optimizer_step(opt)`` was ``xm.reduce_gradients(opt)`` (all-reduce of every gradient,
    scaled by 1 / world size) + ``opt.step()`` (torch_xla ``xla_model.py``). Under DDP/FSDP the
    gradients are averaged already; elsewhere the averaging is written out (Neuron distributed guide).

    Safe when DDP/FSDP wraps the model on every code path to the call: same function, earlier, not
    under a branch of its own. Otherwise one helper per file averages the gradients before the step.
    """

    meta = RuleMeta(
        "NM113",
        "xm.optimizer_step(opt) -> opt.step()",
        safety=REVIEW,
        risks=frozenset({"collectives"}),
        summary=(
            "xm.optimizer_step also averaged gradients across ranks. Where DistributedDataParallel/FSDP wraps "
            "the model on the way to the call, that averages them and the step is plain; elsewhere a helper "
            "added once per file (`_average_gradients(optimizer)`: all-reduce each gradient, divide by the world "
            "size, nothing for one rank) runs before the step. xm.reduce_gradients becomes that helper call, or "
            "goes under DDP."
        ),
        docs=(DOCS_DISTRIBUTED,),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "loss.backward()\n"
                "xm.optimizer_step(optimizer)\n"
            ),
            after=(
                "import torch.distributed as dist\n\n\n"
                + AVERAGE_GRADIENTS_DEF.format(name=AVERAGE_GRADIENTS, dist="dist")
                + "\n\n"
                "loss.backward()\n"
                f"# neuron-migrate(NM113): {AVERAGED.format(name=AVERAGE_GRADIENTS)}{NO_PROCESS_GROUP}\n"
                f"{AVERAGE_GRADIENTS}(optimizer)\n"
                "optimizer.step()\n"
            ),
        ),
    )
    calls = {
        "torch_xla.core.xla_model.optimizer_step": "optimizer_step",
        "torch_xla.core.xla_model.reduce_gradients": "reduce_gradients",
    }

    NO_WRAPPER = (
        "xm.optimizer_step also averaged gradients across ranks; wrap the model in "
        "DistributedDataParallel/FSDP (or all-reduce the grads) or ranks diverge"
    )
    FSDP_ELSEWHERE = (
        "xm.optimizer_step also averaged gradients across ranks; FSDP is used in this file but not on the way "
        "here: check this model is sharded with fully_shard (its gradients are then reduced), else wrap it in DDP"
    )
    GROUPS = (
        "xm.optimizer_step reduced gradients within replica `groups`; give DDP/FSDP the matching "
        "process group (dist.new_group) instead"
    )

    def optimizer_step(self, original: cst.Call, updated: cst.Call, qname: str):
        args = bind_args(updated, OPTIMIZER_STEP_PARAMS)
        if args is None or "optimizer" not in args:
            self.ctx.manual(original, "call `optimizer.step(**optimizer_args)` and average gradients with DDP/FSDP")
            return updated
        optimizer = receiver(args["optimizer"].value)
        step = self.ctx.expr(f"{optimizer}.step({self._step_arguments(args.get('optimizer_args'))})")
        if arg_value(args, "groups") is not None and "groups" in args:
            self.ctx.review(self.GROUPS)
            return step
        if data_parallel_reaches(self.ctx, original):
            self.ctx.confirm_safe()
            return step
        if fsdp_visible(self.ctx):
            self.ctx.review(self.FSDP_ELSEWHERE)
            return step
        line = self.ctx.statement_for_call.get(id(original))
        if line is None or not is_plain_reference(args["optimizer"].value):
            self.ctx.review(self.NO_WRAPPER)
            return step
        if self.ctx.is_suppressed(self.meta.id, original):
            return step  # left as it is by the engine; no helper for it
        self._schedule_helper(original)
        average = cst.parse_statement(f"{AVERAGE_GRADIENTS}({optimizer})\n")
        statement = line.with_changes(body=[line.body[0].with_changes(value=step)], leading_lines=())
        return StatementReplacement([average, statement], fallback=self.NO_WRAPPER)

    def reduce_gradients(self, original: cst.Call, updated: cst.Call, qname: str):
        args = bind_args(updated, REDUCE_GRADIENTS_PARAMS)
        understood = args is not None and "optimizer" in args and "groups" not in args
        if understood and data_parallel_reaches(self.ctx, original):
            self.ctx.confirm_safe()
            return StatementReplacement([], fallback="delete it: DDP/FSDP average the gradients during backward")
        if not understood or fsdp_visible(self.ctx) or not is_plain_reference(args["optimizer"].value):
            self.ctx.manual(
                original,
                "average gradients across ranks: wrap the model in DistributedDataParallel, or all-reduce each "
                "p.grad with dist.all_reduce and divide by dist.get_world_size()",
            )
            return updated
        average = f"{AVERAGE_GRADIENTS}({receiver(args['optimizer'].value)})"
        if not self.ctx.is_suppressed(self.meta.id, original):
            self._schedule_helper(original)
        return self.ctx.expr(average)

    def _schedule_helper(self, original: cst.Call) -> None:
        """Define the averaging helper once, after the file's imports, and say so at the call."""
        dist = self.ctx.require_import("torch.distributed", alias="dist")
        helper = AVERAGE_GRADIENTS_DEF.format(name=AVERAGE_GRADIENTS, dist=dist)
        indent = self.ctx.module.default_indent
        if indent != "    ":
            helper = re.sub(r"^((?:    )+)", lambda m: indent * (len(m.group(1)) // 4), helper, flags=re.M)
        self.ctx.add_setup(
            original, helper.rstrip("\n"), "", unless=f"def {AVERAGE_GRADIENTS}(", label=f"`{AVERAGE_GRADIENTS}()`"
        )
        message = AVERAGED.format(name=AVERAGE_GRADIENTS)
        self.ctx.review(message if process_group_planned(self.ctx) else message + NO_PROCESS_GROUP)

    @staticmethod
    def _step_arguments(arg: cst.Arg | None) -> str:
        if arg is None:
            return ""
        value = arg.value
        if isinstance(value, cst.Dict):
            pairs = []
            for element in value.elements:
                key = literal(element.key, single_token=True) if isinstance(element, cst.DictElement) else UNKNOWN
                if not (isinstance(key, str) and key.isidentifier()):
                    return f"**{code_of(value)}"
                pairs.append(f"{key}={code_of(element.value)}")
            return ", ".join(pairs)
        return f"**{receiver(value)}"


STEP_CLOSURE_PARAMS = ("closure", "args", "run_async")


@register
class StepClosureCall(Rule):
    """``xm.add_step_closure(fn, args)`` deferred ``fn`` to the end of the lazy step; in eager mode it
    can run where it stands, and reading tensor values in it waits for the device (Neuron eager docs)."""

    meta = RuleMeta(
        "NM114",
        "xm.add_step_closure(fn, args) -> fn(*args)",
        safety=REVIEW,
        risks=frozenset({"performance"}),
        summary="The closure now runs immediately instead of after the step; tensor reads in it wait for the device.",
        docs=(DOCS_EAGER,),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "xm.add_step_closure(log_loss, args=(loss, step))\n"
            ),
            after=(
                "# neuron-migrate(NM114): the closure now runs immediately, not after the step; its tensor "
                "reads wait for the device\n"
                "log_loss(loss, step)\n"
            ),
        ),
    )
    calls = {"torch_xla.core.xla_model.add_step_closure": "call_now"}

    MESSAGE = "the closure now runs immediately, not after the step; its tensor reads wait for the device"

    def call_now(self, original: cst.Call, updated: cst.Call, qname: str):
        args = bind_args(updated, STEP_CLOSURE_PARAMS)
        if args is None or "closure" not in args:
            self.ctx.manual(original, "call the closure directly: `fn(*args)`")
            return updated
        closure = args["closure"].value
        call_args = spread_arguments(args.get("args"))
        self.ctx.review(self.MESSAGE)
        if isinstance(closure, cst.Lambda):
            body = inline_lambda(closure, args.get("args"))
            if body is not None:
                return self._inline(body)
        return self.ctx.expr(f"{receiver(closure)}({call_args})")

    def _inline(self, body: cst.BaseExpression) -> cst.BaseExpression:
        # `lambda: print(x)` called at once is just `print(x)`.
        if isinstance(body, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or body.lpar:
            return body
        return self.ctx.expr(f"({code_of(body)})")


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


@register
class LazyModeToggleRemoval(Rule):
    """Switches between lazy and eager execution, and forced materialisation: TorchNeuron is always
    eager (Neuron eager docs; ``xm.unlazy``, ``eager_mode``)."""

    meta = RuleMeta(
        "NM115",
        "lazy/eager mode toggles removed",
        safety=SAFE,
        summary=(
            "xm.unlazy(), torch_xla.experimental.eager_mode() and `with eager_mode_context(...)` are dropped: "
            "TorchNeuron is eager by default and has no lazy mode to switch."
        ),
        docs=(DOCS_EAGER,),
        example=Example(
            before=(
                "import torch_xla\n"
                "import torch_xla.experimental\n\n"
                "torch_xla.experimental.eager_mode(True)\n"
                "model = build_model()\n"
            ),
            after="model = build_model()\n",
        ),
    )
    rows = ROWS

    def leave_With(self, original: cst.With, updated: cst.With):
        return unwrap_with(self, original, updated, EAGER_CONTEXTS)


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


def file_functions(ctx: FileContext) -> _Functions:
    if "compile_functions" not in ctx.facts:
        finder = _Functions()
        ctx.module.visit(finder)
        ctx.facts["compile_functions"] = finder
    return ctx.facts["compile_functions"]  # type: ignore[return-value]


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


@register
class CompileToTorchCompile(Rule):
    """``torch_xla.compile`` and the ``openxla`` Dynamo backends -> ``torch.compile(backend="neuron",
    fullgraph=True)``; the Neuron backend rejects ``dynamic=True`` and only honours the default mode
    (Neuron torch.compile reference). XLA compiled whole training steps as one graph; dynamo cannot
    (backward, ``optimizer.step()``, loader iteration and ``print`` break graphs), so a function that
    does those is compiled without ``fullgraph``."""

    meta = RuleMeta(
        "NM116",
        "torch_xla.compile / backend=\"openxla\" -> torch.compile(backend=\"neuron\")",
        safety=REVIEW,
        risks=frozenset({"performance"}),
        summary=(
            "Compiled regions use torch.compile with the neuron backend: fullgraph=True for a forward, none for a "
            "whole training step (backward, optimizer step, data loading, print are graph breaks); dynamic=True "
            "and non-default modes are dropped because the backend does not support them."
        ),
        docs=(DOCS_COMPILE, DOCS_COMPILE_HOWTO),
        triggers=(b"torch_xla", b"openxla"),
        example=Example(
            before=(
                "import torch\n\n"
                "model = torch.compile(model, backend=\"openxla\", dynamic=True)\n"
            ),
            after=(
                "import torch\n\n"
                "# neuron-migrate(NM116): graph breaks now raise (fullgraph=True); dynamic=True dropped: "
                "shapes must be static, pad inputs to fixed sizes\n"
                "model = torch.compile(model, backend=\"neuron\", fullgraph=True)\n"
            ),
        ),
    )
    calls = {name: "xla_compile" for name in XLA_COMPILE}

    FULLGRAPH = "graph breaks now raise (fullgraph=True)"
    FULLGRAPH_UNSEEN = FULLGRAPH + "; drop it if the compiled code runs backward or the optimizer step"
    STEP = (
        "fullgraph not set: `{name}` is training code, not a pure forward (it {what}), which dynamo splits into "
        'graphs; to get one graph, compile only the forward: `model = torch.compile(model, backend="neuron")`'
    )
    DYNAMIC = "dynamic=True dropped: shapes must be static, pad inputs to fixed sizes"
    GRAPH_LIMIT = "the graph-count limit is gone; torch._dynamo.config.recompile_limit bounds recompiles"
    STATIC = "check the compiled function has static input shapes"

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.with_items: set[int] = set()

    def visit_WithItem(self, node: cst.WithItem) -> None:
        self.with_items.add(id(node.item))

    def fullgraph_note(self, target: cst.CSTNode | None, asked: bool, unseen: str) -> tuple[bool, str]:
        """Whether to compile with fullgraph=True, and what the marker says about it: a training step
        (backward, optimizer step, data loading, print) cannot be one graph, a pure forward can;
        ``unseen`` is the note when the compiled code is not in this file."""
        if isinstance(target, cst.FunctionDef):
            bodies, name = [target.body], target.name.value
        elif target is not None:
            bodies, name = compiled_bodies(self.ctx, target), code_of(target)
        else:
            bodies, name = [], ""
        found = list(dict.fromkeys(what for body in bodies for what in step_code(body)))
        if found:
            return False, self.STEP.format(name=name, what=", ".join(found))
        if asked:
            return True, ""
        return True, self.FULLGRAPH if bodies else unseen

    def xla_compile(self, original: cst.Call, updated: cst.Call, qname: str):
        if id(original) in self.with_items:
            return updated  # `with torch_xla.compile():` is unwrapped in leave_With
        args = bind_args(updated, XLA_COMPILE_PARAMS)
        if args is None:
            self.ctx.manual(original, 'use `torch.compile(fn, backend="neuron", fullgraph=True)`')
            return updated
        torch = self.ctx.require_import("torch")
        target = f"{code_of(args['f'].value)}, " if "f" in args else ""
        # `@torch_xla.compile(full_graph=True)` compiles the function it decorates.
        compiled = args["f"].value if "f" in args else file_functions(self.ctx).decorated.get(id(original))
        asked = arg_value(args, "full_graph") is True
        fullgraph, note = self.fullgraph_note(compiled, asked, self.FULLGRAPH_UNSEEN)
        notes = [note] if note else []
        if "max_different_graphs" in args or "num_different_graphs_allowed" in args:
            notes.append(self.GRAPH_LIMIT)
        self.ctx.review("; ".join(notes) or self.STATIC)
        return self.ctx.expr(f'{torch}.compile({target}backend="neuron"{", fullgraph=True" if fullgraph else ""})')

    def leave_Decorator(self, original: cst.Decorator, updated: cst.Decorator):
        if not isinstance(original.decorator, (cst.Name, cst.Attribute)):
            return updated
        if not self.ctx.any_qualified_name(original.decorator, XLA_COMPILE):
            return updated
        torch = self.ctx.require_import("torch")
        decorated = file_functions(self.ctx).decorated.get(id(original.decorator))
        fullgraph, note = self.fullgraph_note(decorated, False, self.FULLGRAPH_UNSEEN)
        self.ctx.review(note)
        code = f'{torch}.compile(backend="neuron", fullgraph=True)' if fullgraph else f'{torch}.compile(backend="neuron")'
        return updated.with_changes(decorator=self.ctx.expr(code))

    def leave_With(self, original: cst.With, updated: cst.With):
        result = unwrap_with(self, original, updated, XLA_COMPILE)
        if result is not updated:
            self.ctx.review(
                "this block was compiled as one graph; it runs eagerly now, move it into a function "
                'and torch.compile(fn, backend="neuron") it if it is hot'
            )
        return result

    @staticmethod
    def _compiled_function(call: cst.Call) -> cst.BaseExpression | None:
        """What ``torch.compile(fn, ...)`` compiles; None for ``model.compile(...)``."""
        if isinstance(call.func, cst.Attribute) and code_of(call.func.value) != "torch":
            return None
        first = next((a for a in call.args if a.keyword is None and not a.star), None)
        if first is None:
            first = next((a for a in call.args if a.keyword and a.keyword.value == "model"), None)
        return first.value if first is not None else None

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        """Any ``compile(..., backend="openxla")``: torch.compile, nn.Module.compile, aliases."""
        func = updated.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
        if name != "compile":
            return updated
        backend = next((a for a in updated.args if a.keyword and a.keyword.value == "backend"), None)
        if backend is None or literal(backend.value, single_token=True) not in XLA_DYNAMO_BACKENDS:
            return updated
        quote = backend.value.quote if isinstance(backend.value, cst.SimpleString) else '"'
        args, notes = [], []
        has_fullgraph = False
        for arg in updated.args:
            kw = arg.keyword.value if arg.keyword else None
            if arg is backend:
                arg = arg.with_changes(value=cst.SimpleString(f"{quote}neuron{quote}"))
            elif kw == "dynamic" and literal(arg.value) is not False and literal(arg.value) is not None:
                notes.append(self.DYNAMIC)
                continue
            elif kw == "mode" and literal(arg.value, single_token=True) not in ("default", None):
                notes.append(f"mode={code_of(arg.value)} dropped: only the default mode is supported")
                continue
            elif kw == "fullgraph":
                has_fullgraph = True
            args.append(arg)
        if not has_fullgraph:
            # Mostly a module here: unless the file shows step code, its forward can be one graph.
            fullgraph, note = self.fullgraph_note(self._compiled_function(original), False, self.FULLGRAPH)
            if fullgraph:
                args.append(new_keyword("fullgraph", "True"))
            notes.insert(0, note)
        self.ctx.review("; ".join(notes) or "check the compiled region has static input shapes")
        return with_args(updated, args)
