"""NM116: torch_xla.compile / backend="openxla" -> torch.compile(backend="neuron")"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import FileContext, code_of
from neuron_migrate.rules.base import REVIEW, Edit, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import arg_value, bind_args, literal, new_keyword
from neuron_migrate.rules.xla_step.common import (
    DOCS_COMPILE,
    DOCS_COMPILE_HOWTO,
    XLA_COMPILE,
    XLA_COMPILE_PARAMS,
    XLA_DYNAMO_BACKENDS,
    compiled_bodies,
    file_functions,
    step_code,
    unwrap_with,
    with_args,
)


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
    STATIC_REGION = "check the compiled region has static input shapes"
    EAGER_BLOCK = (
        "this block was compiled as one graph; it runs eagerly now, move it into a function "
        'and torch.compile(fn, backend="neuron") it if it is hot'
    )

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
            self.ctx.manual(self.meta, original, 'use `torch.compile(fn, backend="neuron", fullgraph=True)`')
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
        code = f'{torch}.compile({target}backend="neuron"{", fullgraph=True" if fullgraph else ""})'
        return Edit(self.ctx.expr(code), review="; ".join(notes) or self.STATIC)

    def leave_Decorator(self, original: cst.Decorator, updated: cst.Decorator):
        if not isinstance(original.decorator, (cst.Name, cst.Attribute)):
            return updated
        if not self.ctx.any_qualified_name(original.decorator, XLA_COMPILE):
            return updated
        torch = self.ctx.require_import("torch")
        decorated = file_functions(self.ctx).decorated.get(id(original.decorator))
        fullgraph, note = self.fullgraph_note(decorated, False, self.FULLGRAPH_UNSEEN)
        code = f'{torch}.compile(backend="neuron", fullgraph=True)' if fullgraph else f'{torch}.compile(backend="neuron")'
        return Edit(updated.with_changes(decorator=self.ctx.expr(code)), review=note)

    def leave_With(self, original: cst.With, updated: cst.With):
        result = unwrap_with(self, original, updated, XLA_COMPILE)
        if result is updated:
            return updated
        return Edit(result, review=self.EAGER_BLOCK)

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
        return Edit(with_args(updated, args), review="; ".join(notes) or self.STATIC_REGION)
