"""NM128: process group backend "xla" -> "neuron"."""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.walk import walk
from neuron_migrate.rules.base import SAFE, Edit, Example, Fact, RuleMeta, register
from neuron_migrate.rules.calls import bind_args, literal
from neuron_migrate.rules.xla_data.common import LAUNCHERS
from neuron_migrate.rules.xla_step.common import answer_process_group_planned
from neuron_migrate.rules.xla_distributed.common import (
    DOCS_DISTRIBUTED,
    DOCS_TUTORIAL,
    INIT_PROCESS_GROUP,
    WORKER_INIT,
    DistributedRule,
    _bare_call,
    _leads_function,
)


class _ProcessGroupPlan(cst.CSTVisitor):
    """The workers started by xmp.spawn / torch_xla.launch (module-level functions) and the file's
    own init_process_group calls, split into the "xla" ones this rule migrates and the others."""

    def __init__(self, ctx) -> None:
        super().__init__()
        self.ctx = ctx
        self.functions: dict[str, cst.FunctionDef] = {}
        self.joining: set[str] = set()  # functions whose own body starts the "xla" process group
        self.workers: dict[str, str] = {}  # worker name -> the launcher that started it
        self.xla_inits: set[int] = set()
        self.other_inits = 0
        self.enclosing: list[cst.FunctionDef | None] = [None]
        # module-level functions that choose their core themselves (a set_device call anywhere in them)
        self.choosing_core: set[str] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if len(self.enclosing) == 1:
            self.functions[node.name.value] = node
            if isinstance(node.body, cst.IndentedBlock) and any(map(self._xla_init, node.body.body)):
                self.joining.add(node.name.value)
        self.enclosing.append(node)

    def leave_FunctionDef(self, original: cst.FunctionDef) -> None:
        self.enclosing.pop()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        call = _bare_call(node)
        if call is None:
            return
        launcher = self.ctx.any_qualified_name(call.func, LAUNCHERS.keys())
        if launcher is not None:
            args = bind_args(call, LAUNCHERS[launcher][0])
            fn = args.get("fn") if args else None
            if fn is not None and isinstance(fn.value, cst.Name):
                self.workers[fn.value.value] = "torch_xla.launch" if "launch" in launcher else "xmp.spawn"
        elif self._xla_init(node):
            self.xla_inits.add(id(call))

    def _xla_init(self, statement: cst.BaseStatement) -> bool:
        call = _bare_call(statement)
        return call is not None and bool(self.ctx.any_qualified_name(call.func, INIT_PROCESS_GROUP)) and (
            _xla_backend(call)
        )

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.any_qualified_name(node.func, INIT_PROCESS_GROUP) and id(node) not in self.xla_inits:
            self.other_inits += 1
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in SET_DEVICE and len(self.enclosing) > 1:
            self.choosing_core.add(self.enclosing[1].name.value)

    def worker_defs(self) -> dict[int, str]:
        """id(def) -> its launcher, for the workers that get the process group at their start: none
        when the file initialises one some way this rule does not rewrite (its own backend), and not
        for a worker that starts with its own init_process_group("xla")."""
        if self.other_inits:
            return {}
        return self._defined_workers()

    def own_group_workers(self) -> dict[int, str]:
        """id(def) -> its launcher, for the workers of a file that starts its process group its own way:
        they are only put on their rank's NeuronCore at their start."""
        if not self.other_inits:
            return {}
        return {key: launcher for key, launcher in self._defined_workers().items() if key not in self._choosing()}

    def _choosing(self) -> set[int]:
        return {id(self.functions[name]) for name in self.choosing_core if name in self.functions}

    def _defined_workers(self) -> dict[int, str]:
        return {
            id(self.functions[name]): launcher
            for name, launcher in self.workers.items()
            if name in self.functions and name not in self.joining
        }

    @property
    def starts_own_group(self) -> bool:
        """The file's own init_process_group calls (migrated or not), not the one added for a worker."""
        return bool(self.xla_inits or self.other_inits)

    @property
    def binds_cores(self) -> bool:
        """Whether the rewrite puts each rank on its own NeuronCore somewhere in this file."""
        return bool(self.xla_inits or self._defined_workers())


# torch.neuron.set_device / torch.accelerator.set_device_index: the program binds its rank's core itself.
SET_DEVICE = frozenset({"set_device", "set_device_index"})


def _xla_backend(call: cst.Call) -> bool:
    bound = bind_args(call, XlaBackendToNeuron.PARAMS, other_keywords=True)
    backend = literal(bound["backend"].value) if bound and "backend" in bound else None
    return isinstance(backend, str) and backend.lower() == "xla"


def _plan_process_groups(ctx) -> _ProcessGroupPlan:
    plan = _ProcessGroupPlan(ctx)
    walk(ctx.module, plan)  # the facts gathered do not depend on the order of visits
    return plan


PROCESS_GROUP_PLAN = Fact("process_group_plan", _plan_process_groups)


def process_group_plan(ctx) -> _ProcessGroupPlan:
    return ctx.fact(PROCESS_GROUP_PLAN)


@answer_process_group_planned
def initialises_process_group(ctx) -> bool:
    """Whether the migrated file starts a process group (its own call, or one added for its workers)."""
    plan = process_group_plan(ctx)
    return bool(plan.xla_inits or plan.other_inits or plan.worker_defs())


@register
class XlaBackendToNeuron(DistributedRule):
    """dist.init_process_group("xla", init_method="xla://" or "pjrt://") -> dist.init_process_group("neuron").

    The workers of xmp.spawn / torch_xla.launch reduced gradients and ran collectives without any
    process group; on TorchNeuron they need one, so the worker function starts by joining it (once:
    the file's own "xla" init calls become guarded by ``dist.is_initialized()``). Each XLA worker ran
    on its own core; a torchrun process starts on core 0 of its host, so right after joining the
    group it is put on the core of its local rank (``torch.neuron.set_device``).
    """

    meta = RuleMeta(
        "NM128",
        'process group backend "xla" -> "neuron"',
        safety=SAFE,
        risks=frozenset({"launch", "collectives"}),
        summary=(
            'TorchNeuron registers the "neuron" backend; under torchrun the default env:// init method '
            "replaces xla:// and pjrt://, and the side-effect import of torch_xla.distributed.xla_backend goes. "
            "A worker started by xmp.spawn / torch_xla.launch initialises the process group at its start when "
            "torchrun launched it. Right after the group starts, the rank is put on its own NeuronCore "
            "(`torch.neuron.set_device(LOCAL_RANK)`): a torchrun process sees every core of its host."
        ),
        docs=(DOCS_DISTRIBUTED, DOCS_TUTORIAL),
        triggers=(b"init_process_group", b"torch_xla"),
        example=Example(
            before=(
                "import torch.distributed as dist\n"
                "import torch_xla.distributed.xla_backend\n\n"
                'dist.init_process_group("xla", init_method="xla://")\n'
            ),
            after=(
                "import torch.distributed as dist\n"
                "import os\n"
                "import torch\n\n"
                'dist.init_process_group("neuron")\n'
                'torch.neuron.set_device(int(os.environ.get("LOCAL_RANK", "0")))\n'
            ),
        ),
    )
    calls = {name: "to_neuron_backend" for name in INIT_PROCESS_GROUP}
    PARAMS = ("backend", "init_method")
    # init methods only the XLA runtime understands; torchrun's env:// is the default that replaces them
    XLA_INIT_METHODS = ("xla://", "pjrt://")

    def to_neuron_backend(self, original: cst.Call, updated: cst.Call, qname: str):
        call = self._neuron_call(updated)
        plan = process_group_plan(self.ctx)
        if id(original) not in plan.xla_inits:
            return call
        # A statement of its own: the rank is put on its NeuronCore right after it joins the group (a
        # program joins once, whichever of its init calls runs).
        if plan.worker_defs():
            # The worker has joined the process group already when torchrun started it.
            lines = [f"if not {self.dist}.is_initialized():", f"\t{self.code_at(call, 1)}", f"\t{self.bind_core()}"]
            message = "guarded: the worker function initialises the process group at its start"
        else:
            lines = [self.code_at(call, 0), self.bind_core()]
            message = 'process group backend "neuron"; this rank then computes on its own NeuronCore'
        return Edit(self.replace_with(original, lines), message=message)

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        """``torch.dist.init_process_group(backend="xla")``, a wrapper of the project's own: a call named
        init_process_group that is not torch.distributed's, asking for the "xla" backend by name."""
        func = original.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
        if name != "init_process_group" or self.ctx.any_qualified_name(func, INIT_PROCESS_GROUP):
            return updated
        if self._neuron_call(updated) is not updated:
            self.ctx.manual(
                self.meta,
                original,
                'this init_process_group is not torch.distributed\'s and asks for the "xla" backend, which '
                'TorchNeuron does not have: join the process group with `torch.distributed.init_process_group("neuron")`',
            )
        return updated

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef):
        plan = process_group_plan(self.ctx)
        launcher = plan.worker_defs().get(id(original))
        own_group = plan.own_group_workers().get(id(original))
        if (launcher or own_group) is None or not isinstance(updated.body, cst.IndentedBlock):
            return updated
        if launcher is not None:
            names = {"launcher": launcher, "os": self.ctx.require_import("os"), "dist": self.dist}
            comment, *lines = (line.format(**names, bind=self.bind_core()) for line in WORKER_INIT)
            message = (
                f'the worker of {launcher} joins the "neuron" process group on its own NeuronCore when torchrun '
                "started it"
            )
        else:
            comment = (
                f"# torchrun started this process: compute on its own NeuronCore, as the workers of {own_group} did"
            )
            lines = [self.bind_core()]
            message = f"the worker of {own_group} computes on its rank's own NeuronCore"
        text = "".join(line.replace("\t", self.indent) + "\n" for line in lines)
        [first] = self.ctx.statements(text)
        first = first.with_changes(leading_lines=[cst.EmptyLine(comment=cst.Comment(comment))])
        body = list(updated.body.body)
        position = 0
        while position < len(body) and _leads_function(body[position], position):
            position += 1
        body.insert(position, first)
        return Edit(updated.with_changes(body=updated.body.with_changes(body=body)), message=message, safe=True)

    def _neuron_call(self, updated: cst.Call) -> cst.Call:
        positional = [arg for arg in updated.args if arg.keyword is None and not arg.star]
        args = list(updated.args)
        changed = False
        for index, arg in enumerate(args):
            if arg.star:
                continue
            name = arg.keyword.value if arg.keyword else (self.PARAMS[index] if index < len(self.PARAMS) else None)
            value = literal(arg.value)
            if name == "backend" and isinstance(value, str) and value.lower() == "xla":
                quote = arg.value.value[-1] if isinstance(arg.value, cst.SimpleString) else '"'
                args[index] = arg.with_changes(value=cst.SimpleString(f"{quote}neuron{quote}"))
                changed = True
            elif name == "init_method" and isinstance(value, str) and value.startswith(self.XLA_INIT_METHODS):
                if arg.keyword is None and len(positional) > 2:
                    # Positional arguments follow: keep the slot, let env:// be the default.
                    args[index] = arg.with_changes(value=cst.Name("None"))
                else:
                    args[index] = None
                changed = True
        if not changed:
            return updated
        keep = [arg for arg in args if arg is not None]
        if keep and len(keep) != len(args):
            keep[-1] = keep[-1].with_changes(comma=updated.args[-1].comma)
        return updated.with_changes(args=keep)


def binds_cores(ctx) -> bool:
    """Whether the migrated file puts each torchrun rank on its own NeuronCore itself: where it joins
    the process group, at the start of a spawned worker, or where ``xr.use_spmd()`` was."""
    # spmd_plan reads the data rules' loader names, whose package reads this family's: imported here.
    from neuron_migrate.rules.xla_distributed.spmd_plan import spmd_plan

    return process_group_plan(ctx).binds_cores or bool(spmd_plan(ctx).use_spmd)
