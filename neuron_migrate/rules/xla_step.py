"""Stepping: the lazy-tensor graph cut points of PyTorch/XLA have no meaning in eager TorchNeuron.

``xm.mark_step()`` cut and launched the pending XLA graph. TorchNeuron runs eagerly (ops are
queued and fused adaptively) and ``torch.compile`` regions bound graphs, so the call goes away;
where a caller waited for the device, ``torch.neuron.synchronize()`` does that.

``source_text`` is shared with the data-loading and launch rules.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from neuron_migrate.migrate.context import FileContext, code_of
from neuron_migrate.rules.base import REVIEW, SAFE, Example, Rule, RuleMeta, StatementReplacement, register
from neuron_migrate.rules.calls import (
    UNKNOWN,
    arg_value,
    bind_args,
    has_params,
    literal,
    new_keyword,
    receiver,
    spread_arguments,
)

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
    if "source" not in ctx.facts:
        ctx.facts["source"] = ctx.module.code
    return ctx.facts["source"]  # type: ignore[return-value]


# Gradient averaging is done by one of these wrappers when the file uses it.
DATA_PARALLEL_WRAPPERS = frozenset({"DistributedDataParallel", "DDP", "fully_shard", "FullyShardedDataParallel"})


class _NamesUsed(cst.CSTVisitor):
    def __init__(self, wanted: frozenset[str]) -> None:
        self.wanted = wanted
        self.found = False

    def visit_Name(self, node: cst.Name) -> None:
        self.found = self.found or node.value in self.wanted


def data_parallel_visible(ctx: FileContext) -> bool:
    """Whether the code (not its comments: markers name these wrappers too) uses DDP or FSDP."""
    if "data_parallel" not in ctx.facts:
        visible = any(word in source_text(ctx) for word in DATA_PARALLEL_WRAPPERS)
        if visible:
            names = _NamesUsed(DATA_PARALLEL_WRAPPERS)
            ctx.module.visit(names)
            visible = names.found
        ctx.facts["data_parallel"] = visible
    return bool(ctx.facts["data_parallel"])


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
ALL_REDUCE_LOOP = (
    "for group in optimizer.param_groups:\n"
    "    for p in group['params']:\n"
    "        if p.grad is not None:\n"
    "            dist.all_reduce(p.grad)\n"
    "            p.grad /= dist.get_world_size()"
)


@register
class OptimizerStep(Rule):
    """``xm.optimizer_step(opt)`` was ``reduce_gradients(opt)`` + ``opt.step()``: the cross-replica
    gradient all-reduce must come from DDP/FSDP on TorchNeuron (Neuron distributed guide).

    Reviewed by default; safe when the file wraps its model in DDP/FSDP, which does the averaging.
    """

    meta = RuleMeta(
        "NM113",
        "xm.optimizer_step(opt) -> opt.step()",
        safety=REVIEW,
        risks=frozenset({"collectives"}),
        summary=(
            "xm.optimizer_step also averaged gradients across ranks; that now comes from "
            "DistributedDataParallel/FSDP (review marker when no such wrapper is visible in the file). "
            "xm.reduce_gradients is deleted under DDP/FSDP, else left with the explicit all-reduce as next step."
        ),
        docs=(DOCS_DISTRIBUTED,),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "loss.backward()\n"
                "xm.optimizer_step(optimizer)\n"
            ),
            after=(
                "loss.backward()\n"
                "# neuron-migrate(NM113): xm.optimizer_step also averaged gradients across ranks; wrap the "
                "model in DistributedDataParallel/FSDP (or all-reduce the grads) or ranks diverge\n"
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

    def optimizer_step(self, original: cst.Call, updated: cst.Call, qname: str):
        args = bind_args(updated, OPTIMIZER_STEP_PARAMS)
        if args is None or "optimizer" not in args:
            self.ctx.manual(original, "call `optimizer.step(**optimizer_args)` and average gradients with DDP/FSDP")
            return updated
        step_args = self._step_arguments(args.get("optimizer_args"))
        new = self.ctx.expr(f"{receiver(args['optimizer'].value)}.step({step_args})")
        groups = arg_value(args, "groups")
        if groups is not None and "groups" in args:
            self.ctx.review(
                "xm.optimizer_step reduced gradients within replica `groups`; give DDP/FSDP the matching "
                "process group (dist.new_group) instead"
            )
        elif not data_parallel_visible(self.ctx):
            self.ctx.review(self.NO_WRAPPER)
        else:
            self.ctx.confirm_safe()
        return new

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

    def reduce_gradients(self, original: cst.Call, updated: cst.Call, qname: str):
        args = bind_args(updated, REDUCE_GRADIENTS_PARAMS)
        if data_parallel_visible(self.ctx) and args is not None and "groups" not in args:
            self.ctx.review(
                "gradients are averaged by DDP/FSDP during backward now; check this optimizer's model is wrapped"
            )
            return StatementReplacement([], fallback="delete it: DDP/FSDP average the gradients during backward")
        self.ctx.manual(
            original,
            "average gradients across ranks: wrap the model in DistributedDataParallel, or all-reduce each "
            "p.grad with dist.all_reduce and divide by dist.get_world_size()",
            fix=ALL_REDUCE_LOOP,
        )
        return updated


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


LAZY_TOGGLES = {
    "torch_xla.core.xla_model.unlazy": "remove",
    "torch_xla.experimental.eager_mode": "remove",
    "torch_xla.experimental.eager.eager_mode": "remove",
    # What eager_mode() calls; some scripts flip it directly.
    "torch_xla._XLAC._set_use_eager_mode": "remove",
}
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
    calls = dict(LAZY_TOGGLES)

    def remove(self, original: cst.Call, updated: cst.Call, qname: str):
        return StatementReplacement([], fallback="drop the call; TorchNeuron is always eager")

    def leave_With(self, original: cst.With, updated: cst.With):
        return unwrap_with(self, original, updated, EAGER_CONTEXTS)


XLA_COMPILE = frozenset({"torch_xla.compile", "torch_xla.torch_xla.compile"})
XLA_COMPILE_PARAMS = ("f", "full_graph", "name", "max_different_graphs", "num_different_graphs_allowed")
XLA_DYNAMO_BACKENDS = ("openxla", "openxla_eval")


@register
class CompileToTorchCompile(Rule):
    """``torch_xla.compile`` and the ``openxla`` Dynamo backends -> ``torch.compile(backend="neuron",
    fullgraph=True)``; the Neuron backend rejects ``dynamic=True`` and only honours the default mode
    (Neuron torch.compile reference)."""

    meta = RuleMeta(
        "NM116",
        "torch_xla.compile / backend=\"openxla\" -> torch.compile(backend=\"neuron\")",
        safety=REVIEW,
        risks=frozenset({"performance"}),
        summary=(
            "Compiled regions use torch.compile with the neuron backend and fullgraph=True; dynamic=True and "
            "non-default modes are dropped because the backend does not support them."
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
    DYNAMIC = "dynamic=True dropped: shapes must be static, pad inputs to fixed sizes"
    GRAPH_LIMIT = "the graph-count limit is gone; torch._dynamo.config.recompile_limit bounds recompiles"

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.with_items: set[int] = set()

    def visit_WithItem(self, node: cst.WithItem) -> None:
        self.with_items.add(id(node.item))

    def xla_compile(self, original: cst.Call, updated: cst.Call, qname: str):
        if id(original) in self.with_items:
            return updated  # `with torch_xla.compile():` is unwrapped in leave_With
        args = bind_args(updated, XLA_COMPILE_PARAMS)
        if args is None:
            self.ctx.manual(original, 'use `torch.compile(fn, backend="neuron", fullgraph=True)`')
            return updated
        torch = self.ctx.require_import("torch")
        target = f"{code_of(args['f'].value)}, " if "f" in args else ""
        notes = []
        if arg_value(args, "full_graph") is not True:
            notes.append(self.FULLGRAPH)
        if "max_different_graphs" in args or "num_different_graphs_allowed" in args:
            notes.append(self.GRAPH_LIMIT)
        self.ctx.review("; ".join(notes) or "check the compiled function has static input shapes")
        return self.ctx.expr(f'{torch}.compile({target}backend="neuron", fullgraph=True)')

    def leave_Decorator(self, original: cst.Decorator, updated: cst.Decorator):
        if not isinstance(original.decorator, (cst.Name, cst.Attribute)):
            return updated
        if not self.ctx.any_qualified_name(original.decorator, XLA_COMPILE):
            return updated
        torch = self.ctx.require_import("torch")
        self.ctx.review(self.FULLGRAPH)
        return updated.with_changes(decorator=self.ctx.expr(f'{torch}.compile(backend="neuron", fullgraph=True)'))

    def leave_With(self, original: cst.With, updated: cst.With):
        result = unwrap_with(self, original, updated, XLA_COMPILE)
        if result is not updated:
            self.ctx.review(
                "this block was compiled as one graph; it runs eagerly now, move it into a function "
                'and torch.compile(fn, backend="neuron") it if it is hot'
            )
        return result

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
            args.append(new_keyword("fullgraph", "True"))
            notes.insert(0, self.FULLGRAPH)
        self.ctx.review("; ".join(notes) or "check the compiled region has static input shapes")
        return with_args(updated, args)
