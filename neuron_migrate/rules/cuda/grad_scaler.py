"""NM611: CUDA GradScaler -> plain backward and step (bf16 needs no loss scaling)"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from neuron_migrate.rules.base import REVIEW, Edit, Example, Fact, RuleMeta, StatementReplacement, register
from neuron_migrate.rules.calls import name_nodes, receiver
from neuron_migrate.rules.cuda.common import DOCS_AMP, DOCS_BF16, CudaRule, cuda_string, legacy_owned
from neuron_migrate.rules.xla_amp.common import GRAD_SCALERS

SCALER_STEP = (
    "bf16 autocast needs no loss scaling: once the autocast is bfloat16, delete the scaler and call "
    "loss.backward() and optimizer.step() directly (fp16 loss scaling on the neuron device is unverified)"
)
REMOVED = (
    "GradScaler removed: bf16 autocast needs no loss scaling; scaler.scale(loss).backward() became "
    "loss.backward() and scaler.step(opt) became opt.step() (check the autocast of this file is bfloat16)"
)
USE_NOTE = "the GradScaler call became the plain call it wrapped (the scaler is removed)"
DROPPED_NOTE = "the GradScaler's update() / unscale_() deleted (the scaler is removed)"
_CUDA_SCALERS = tuple(qname for qname in GRAD_SCALERS if qname.startswith("torch."))
# The scaler's calls the plain pattern is made of: method -> its positional argument count.
_PLAIN_CALLS = {"step": 1, "update": 0, "unscale_": 1}


@dataclass
class _Scalers:
    """The file's scaler variables whose every use is a plain one (the creation, ``scale(x).backward()``,
    ``step(opt)``, ``update()``, ``unscale_(opt)``): their creations and uses, by node id."""

    creations: set[int] = field(default_factory=set)
    names: set[str] = field(default_factory=set)


def _plain_creation(ctx, statement: cst.CSTNode) -> tuple[str, cst.Call] | None:
    """``name = GradScaler()`` / ``GradScaler("cuda")`` / ``GradScaler(device="cuda")``: (name, call)."""
    if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1):
        return None
    target, call = statement.targets[0].target, statement.value
    if not (isinstance(target, cst.Name) and isinstance(call, cst.Call)):
        return None
    if not ctx.any_qualified_name(call.func, frozenset(_CUDA_SCALERS)):
        return None
    args = call.args
    # anything beyond the device (enabled=, init_scale=, growth_interval=) is a decision of the script's
    plain = not args or (
        len(args) == 1 and (args[0].keyword is None or args[0].keyword.value == "device") and cuda_string(args[0].value)
    )
    return (target.value, call) if plain else None


def _use(call: cst.CSTNode) -> tuple[str, cst.Name] | None:
    """A plain use of a scaler as the whole of a statement: (its shape, the scaler's Name)."""
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)):
        return None
    method, owner = call.func.attr.value, call.func.value
    if method == "backward" and isinstance(owner, cst.Call) and isinstance(owner.func, cst.Attribute):
        scale = owner
        if (scale.func.attr.value == "scale" and isinstance(scale.func.value, cst.Name) and len(scale.args) == 1
                and scale.args[0].keyword is None and not scale.args[0].star):
            return "backward", scale.func.value
        return None
    if method in _PLAIN_CALLS and isinstance(owner, cst.Name) and len(call.args) == _PLAIN_CALLS[method]:
        if all(a.keyword is None and not a.star for a in call.args):
            return method, owner
    return None


def _find_scalers(ctx) -> _Scalers:
    found = _Scalers()
    creations: dict[str, list[cst.Assign]] = {}
    allowed: set[int] = set()
    for line in _small_statements(ctx.module):
        made = _plain_creation(ctx, line)
        if made is not None:
            creations.setdefault(made[0], []).append(line)
            allowed.add(id(line.targets[0].target))
        elif isinstance(line, cst.Expr) and (use := _use(line.value)) is not None:
            allowed.add(id(use[1]))
    if not creations:
        return found
    # every other mention of the name (a checkpoint's scaler.state_dict(), a parameter, a return) keeps it
    for node in name_nodes(ctx.module):
        if node.value in creations and id(node) not in allowed:
            creations.pop(node.value)
    found.names = set(creations)
    found.creations = {id(line.value) for lines in creations.values() for line in lines}
    return found


def _small_statements(module: cst.Module):
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.SimpleStatementLine):
            yield from node.body
            continue
        if isinstance(node, cst.BaseExpression):
            continue
        stack.extend(reversed([c for c in node.children if isinstance(c, cst.CSTNode)]))


SCALERS = Fact("cuda_plain_grad_scalers", _find_scalers)


@register
class GradScaler(CudaRule):
    """A ``GradScaler`` of CUDA code. bf16 autocast (NM610) needs no loss scaling, so where the scaler is used
    in the plain pattern only (``scaler = GradScaler()``, ``scaler.scale(loss).backward()``,
    ``scaler.step(opt)``, ``scaler.update()``, ``scaler.unscale_(opt)``) it goes: ``loss.backward()``,
    ``opt.step()``, and nothing for the other two. A scaler created with settings of its own (``enabled=``,
    ``init_scale=``), or used any other way (its state in a checkpoint, passed to a function), is kept with a
    TODO: removing it is a decision about the rest of the script. Files with torch_xla imports are NM152's."""

    meta = RuleMeta(
        "NM611",
        "CUDA GradScaler -> plain backward and step",
        safety=REVIEW,
        risks=frozenset({"numerics"}),
        summary=(
            "bf16 needs no loss scaling: a scaler used only in the plain pattern is removed and its calls become "
            "loss.backward() and optimizer.step(); any other scaler gets a TODO."
        ),
        docs=(DOCS_BF16, DOCS_AMP),
        triggers=(b"GradScaler",),
        example=Example(
            before=(
                "import torch\n\n"
                "scaler = torch.amp.GradScaler(\"cuda\")\n"
                "scaler.scale(loss).backward()\n"
                "scaler.step(optimizer)\n"
                "scaler.update()\n"
            ),
            after=(
                "import torch\n\n"
                f"# neuron-migrate(NM611): {REMOVED}\n"
                "loss.backward()\n"
                "optimizer.step()\n"
            ),
        ),
    )
    calls = {qname: "scaler_created" for qname in _CUDA_SCALERS}
    # ``from torch.cuda.amp import GradScaler`` goes once nothing reads it
    retired_imports = ("torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.cuda.amp.grad_scaler",
                       "torch.amp.grad_scaler")

    def scaler_created(self, original: cst.Call, updated: cst.Call, qname: str):
        if legacy_owned(self.ctx, "NM152"):
            return updated
        if id(original) not in self.ctx.fact(SCALERS).creations:
            self.ctx.manual(self.meta, original, SCALER_STEP)
        return updated

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        """``scaler = GradScaler()`` of a plain scaler: the line goes (the call hook cannot delete a binding)."""
        body = original.body
        if len(body) != 1 or not isinstance(body[0], cst.Assign) or "GradScaler" not in self.ctx.code(body[0].value):
            return updated
        if id(body[0].value) not in self.ctx.fact(SCALERS).creations or legacy_owned(self.ctx, "NM152"):
            return updated
        return Edit(StatementReplacement([]), message=REMOVED, review=REMOVED)

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        use = _use(original)
        if use is None or use[1].value not in self.ctx.fact(SCALERS).names or legacy_owned(self.ctx, "NM152"):
            return updated
        shape = use[0]
        if shape == "backward":
            loss = updated.func.value.args[0].value
            value = loss if receiver(loss) == self.ctx.code(loss) else loss.with_changes(
                lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            return Edit(updated.with_changes(func=updated.func.with_changes(value=value)), message=USE_NOTE, safe=True)
        if shape == "step":
            optimizer = updated.args[0].value
            func = cst.Attribute(value=self.ctx.expr(receiver(optimizer)), attr=cst.Name("step"))
            return Edit(updated.with_changes(func=func, args=[]), message=USE_NOTE, safe=True)
        return Edit(StatementReplacement([], fallback=SCALER_STEP), message=DROPPED_NOTE, safe=True)
