"""Distributed: ranks, collectives, the process group, checkpoints, seeding, SPMD and XLA FSDP.

PyTorch/XLA had its own rank queries, collectives and sharding APIs. On TorchNeuron the stock
``torch.distributed`` API runs over the ``"neuron"`` process-group backend, one process per
NeuronCore launched by torchrun, which also sets ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK``.

Every replacement keeps a migrated single-process script runnable with plain ``python script.py``:
ranks are read from the environment with torchrun's values as defaults (never an unguarded
``dist.get_rank()``), and collectives run only when a process group exists. With one process a
collective is the identity, which is what PyTorch/XLA did with a world size of 1.

Sources: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html
and the torch_xla 2.9 ``xla_model`` / ``runtime`` signatures.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import libcst as cst
from libcst.metadata import QualifiedNameProvider

from neuron_migrate.migrate.context import code_of
from neuron_migrate.migrate.walk import walk
from neuron_migrate import rules as rule_families
from neuron_migrate.rules.base import MANUAL, REVIEW, SAFE, Example, Rule, RuleMeta, StatementReplacement, register
from neuron_migrate.rules.calls import (
    UNKNOWN,
    ComparisonRule,
    arg_value,
    bind_args,
    imported_names,
    is_plain_reference,
    literal,
    name_nodes,
    names_in,
    receiver,
)
from neuron_migrate.rules.tables.xla_distributed import ROWS, TENSOR_STEP, WRAP_STEP, XM, XR
from neuron_migrate.rules.xla_data import LAUNCHERS

NEURON_DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch"
DOCS_DISTRIBUTED = f"{NEURON_DOCS}/guides/torch-distributed.html"
DOCS_TUTORIAL = f"{NEURON_DOCS}/tutorials/tutorial-torch-distributed.html"
DOCS_CHANGES = f"{NEURON_DOCS}/index.html"
DOCS_MODULE = f"{NEURON_DOCS}/reference/api/torch-neuron-module.html"
DOCS_DIST_API = "https://pytorch.org/docs/stable/distributed.html"
DOCS_FSDP2 = "https://pytorch.org/docs/stable/distributed.fsdp.fully_shard.html"
DOCS_DTENSOR = "https://pytorch.org/docs/stable/distributed.tensor.html"
DOCS_DCP = "https://pytorch.org/docs/stable/distributed.checkpoint.html"


# Environment variables torchrun sets, and the value a plain single-process run should see.
ENV_DEFAULTS = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1"}

LEGACY_ARGUMENTS = "an argument still uses a legacy API: migrate it first, then run neuron-migrate again"
_LEADING_TABS = re.compile(r"^\t+")


# ----- helpers shared by the rules of this family ------------------------------------------------
def is_absent_or(bound: dict[str, cst.Arg], name: str, *defaults) -> bool:
    """True when the argument is missing or a literal equal to one of the legacy defaults."""
    if name not in bound:
        return True
    value = literal(bound[name].value)
    return any(value == d and type(value) is type(d) for d in defaults)


def keep_parens(new: cst.BaseExpression, old: cst.BaseExpression) -> cst.BaseExpression:
    if getattr(old, "lpar", None):
        return new.with_changes(lpar=old.lpar, rpar=old.rpar)
    return new


def _is_legacy(qualified_name: str) -> bool:
    prefixes = rule_families.LEGACY_MODULES
    return any(qualified_name == p or qualified_name.startswith(p + ".") for p in prefixes)


class _MultilineString(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.found = self.found or "\n" in node.value

    def visit_FormattedStringText(self, node: cst.FormattedStringText) -> None:
        self.found = self.found or "\n" in node.value


class _Calls(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.found.append(node)


def without_args(call: cst.Call, drop: set[str], params: Sequence[str] = ()) -> cst.Call:
    """``call`` minus the keyword (or trailing positional) arguments named in ``drop``."""
    keep = []
    for position, arg in enumerate(call.args):
        name = arg.keyword.value if arg.keyword else (params[position] if position < len(params) else None)
        if name not in drop:
            keep.append(arg)
    if len(keep) == len(call.args):
        return call
    if keep:
        keep[-1] = keep[-1].with_changes(comma=call.args[-1].comma)
    return call.with_changes(args=keep)


class DistributedRule(Rule):
    """Shared plumbing: environment ranks, imports, statement shapes and statement templates."""

    _module_names: set[str] | None = None

    # ----- imports and names --------------------------------------------------------------------
    @property
    def dist(self) -> str:
        return self.ctx.require_import("torch.distributed", alias="dist")

    @property
    def torch(self) -> str:
        return self.ctx.require_import("torch")

    def env_int(self, var: str, default: str | None = None, quote: str = '"') -> str:
        """``int(os.environ.get("RANK", "0"))``: torchrun's value, or the single-process one."""
        os_name = self.ctx.require_import("os")
        default = default or f"{quote}{ENV_DEFAULTS[var]}{quote}"
        return f"int({os_name}.environ.get({quote}{var}{quote}, {default}))"

    def fresh_name(self, base: str) -> str:
        """A local name the file does not use yet, for the temporaries a rewrite needs."""
        if self._module_names is None:
            self._module_names = names_in(self.ctx.module)
        name, n = base, 1
        while name in self._module_names:
            name, n = f"{base}_{n}", n + 1
        return name

    # ----- where the call's value goes --------------------------------------------------------
    def shape(self, call: cst.Call) -> tuple[str, cst.BaseAssignTargetExpression | None] | None:
        """``("bare", None)`` for ``f()``, ``("assign", target)`` for ``x = f()``, ``("return", None)``
        for ``return f()``; ``None`` when the call sits inside a larger expression."""
        line = self.ctx.statement_for_call.get(id(call))
        if line is None:
            return None
        small = line.body[0]
        if isinstance(small, cst.Expr):
            return ("bare", None)
        if isinstance(small, cst.Return):
            return ("return", None)
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            return ("assign", small.targets[0].target)
        return None

    # ----- building statements -----------------------------------------------------------------
    @property
    def indent(self) -> str:
        return self.ctx.module.default_indent

    def code_at(self, node: cst.CSTNode, depth: int) -> str:
        """Code of ``node`` for a line ``depth`` blocks deeper than the statement it came from."""
        text = code_of(node)
        if "\n" not in text or depth == 0:
            return text
        strings = _MultilineString()
        node.visit(strings)
        if strings.found:
            # Re-indenting would change the value of a string literal that spans lines.
            return text
        return re.sub(r"\n(?=[^\n])", "\n" + self.indent * depth, text)

    def replace_with(self, call: cst.Call, lines: list[str]) -> StatementReplacement:
        """Replace the statement ``call`` stands in by ``lines``; each leading tab is one block level."""
        text = "".join(_LEADING_TABS.sub(lambda m: self.indent * len(m.group()), line) + "\n" for line in lines)
        statements = self.ctx.statements(text)
        line = self.ctx.statement_for_call.get(id(call))
        # The engine keeps a trailing comment only when the replacement ends in a simple line.
        if line is not None and line.trailing_whitespace.comment is not None:
            if not isinstance(statements[-1], cst.SimpleStatementLine):
                first = statements[0]
                if isinstance(first, cst.SimpleStatementLine):
                    first = first.with_changes(trailing_whitespace=line.trailing_whitespace)
                else:
                    first = first.with_changes(body=first.body.with_changes(header=line.trailing_whitespace))
                statements[0] = first
        return StatementReplacement(statements)

    def manual(self, original: cst.Call, updated: cst.CSTNode, message: str) -> cst.CSTNode:
        self.ctx.manual(original, message)
        return updated

    def keeps_legacy_arguments(self, original: cst.Call, updated: cst.Call) -> bool:
        """Do the call's arguments still name a legacy module once the inner rewrites are done?

        Statement rewrites move the arguments into new lines (or drop them); an unmigrated legacy
        API among them is better left in place, where its own TODO marker stays next to it.
        """
        legacy = {
            node.value
            for arg in original.args
            if not self.ctx.any_qualified_name(arg.value, REDUCE_CONSTANTS.keys())
            for node in name_nodes(arg.value)
            if any(_is_legacy(q) for q in self.ctx.qualified_names(node))
        }
        # A reduce constant stays as it is inside the call (see NM127); the rule spells the op itself.
        kept = (arg for arg in updated.args if not _is_reduce_constant_code(arg.value))
        return bool(legacy) and any(legacy & names_in(arg.value) for arg in kept)


class InsideFStrings(DistributedRule):
    """For rules whose replacement contains string literals: inside an f-string they must use
    the other quote (Python before 3.12 rejects the enclosing quote in a replacement field)."""

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # id(call) -> quotes of the f-strings around it
        self.fstring_quotes: dict[int, set[str]] = {}

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        quote = node.start.lstrip("fFrRbBuU")[:1]
        calls = _Calls()
        node.visit(calls)
        for call in calls.found:
            self.fstring_quotes.setdefault(id(call), set()).add(quote)

    def quote(self, call: cst.Call) -> str | None:
        """The quote to write at ``call``, or ``None`` when enclosing f-strings take both."""
        taken = self.fstring_quotes.get(id(call), ())
        for quote in ('"', "'"):
            if quote not in taken:
                return quote
        return None


# ----- NM120: rank and world size ------------------------------------------------------------------
RANK_QUERIES = {
    f"{XM}.get_ordinal": "RANK",
    f"{XR}.global_ordinal": "RANK",
    f"{XR}.process_index": "RANK",
    f"{XM}.xrt_world_size": "WORLD_SIZE",
    f"{XR}.world_size": "WORLD_SIZE",
    f"{XR}.process_count": "WORLD_SIZE",
    f"{XM}.get_local_ordinal": "LOCAL_RANK",
    f"{XR}.local_ordinal": "LOCAL_RANK",
    f"{XR}.local_process_count": "LOCAL_WORLD_SIZE",
}


@register
class RankFromEnvironment(InsideFStrings):
    """xm.get_ordinal() / xr.world_size() / ... -> the torchrun environment variable."""

    meta = RuleMeta(
        "NM120",
        "rank / world-size query read from the torchrun environment",
        safety=SAFE,
        summary=(
            "torchrun sets RANK, WORLD_SIZE and LOCAL_RANK for every process; the defaults keep a "
            "plain single-process run working without a process group."
        ),
        docs=(DOCS_DISTRIBUTED, "https://pytorch.org/docs/stable/elastic/run.html#environment-variables"),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n"
                "import torch_xla.runtime as xr\n\n"
                "rank = xm.get_ordinal()\n"
                "world_size = xr.world_size()\n"
            ),
            after=(
                "import os\n\n"
                'rank = int(os.environ.get("RANK", "0"))\n'
                'world_size = int(os.environ.get("WORLD_SIZE", "1"))\n'
            ),
        ),
    )
    calls = {name: "to_environment" for name in RANK_QUERIES}

    def to_environment(self, original: cst.Call, updated: cst.Call, qname: str):
        var = RANK_QUERIES[qname]
        default = None
        quote = self.quote(original)
        if quote is None:
            return updated
        if updated.args:
            # Only the xm queries take an argument: the value to use without replication info.
            bound = bind_args(updated, ("defval",)) if qname.startswith(XM) else None
            if bound is None:
                return updated
            value = literal(bound["defval"].value)
            default = f"{quote}{value}{quote}" if type(value) is int else code_of(bound["defval"].value)
        return keep_parens(self.ctx.expr(self.env_int(var, default, quote)), updated)


# ----- NM121: master ordinal -------------------------------------------------------------------------
@register
class MasterOrdinalFromEnvironment(ComparisonRule, InsideFStrings):
    """xm.is_master_ordinal(local=True) -> LOCAL_RANK == 0; local=False -> RANK == 0."""

    meta = RuleMeta(
        "NM121",
        "xm.is_master_ordinal() read from the torchrun environment",
        safety=SAFE,
        summary="local=True (the default) meant rank 0 of each host: LOCAL_RANK; local=False meant global RANK 0.",
        docs=(DOCS_DISTRIBUTED,),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "if xm.is_master_ordinal():\n"
                "    writer = make_writer()\n"
                "is_global_master = xm.is_master_ordinal(local=False)\n"
            ),
            after=(
                "import os\n\n"
                'if int(os.environ.get("LOCAL_RANK", "0")) == 0:\n'
                "    writer = make_writer()\n"
                'is_global_master = int(os.environ.get("RANK", "0")) == 0\n'
            ),
        ),
    )
    calls = {f"{XM}.is_master_ordinal": "to_comparison"}

    def to_comparison(self, original: cst.Call, updated: cst.Call, qname: str):
        bound = bind_args(updated, ("local",))
        local = UNKNOWN if bound is None else arg_value(bound, "local", True)
        if type(local) is not bool:
            return self.manual(
                original,
                updated,
                'computed `local=`: write `int(os.environ.get("LOCAL_RANK" if local else "RANK", "0")) == 0`',
            )
        quote = self.quote(original)
        if quote is None:
            return updated
        comparison = self.ctx.expr(f"{self.env_int('LOCAL_RANK' if local else 'RANK', quote=quote)} == 0")
        if updated.lpar:
            return keep_parens(comparison, updated)
        if self.needs_parentheses(original):
            return comparison.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return comparison


# ----- NM122: master_print -----------------------------------------------------------------------------
@register
class MasterPrintToGuardedPrint(DistributedRule):
    """xm.master_print(*args, fd=, local=, flush=) -> print(...) under a rank-0 guard."""

    meta = RuleMeta(
        "NM122",
        "xm.master_print() -> print() on rank 0",
        safety=SAFE,
        summary="master_print printed on global rank 0 (local=False, the default) or on each host's rank 0.",
        docs=(DOCS_DISTRIBUTED,),
        example=Example(
            before=(
                "import sys\n\n"
                "import torch_xla.core.xla_model as xm\n\n"
                'xm.master_print(f"epoch {epoch} loss {loss:.4f}", fd=sys.stderr)\n'
            ),
            after=(
                "import sys\n"
                "import os\n\n"
                'if int(os.environ.get("RANK", "0")) == 0:\n'
                '    print(f"epoch {epoch} loss {loss:.4f}", file=sys.stderr)\n'
            ),
        ),
    )
    calls = {f"{XM}.master_print": "to_print"}

    def to_print(self, original: cst.Call, updated: cst.Call, qname: str):
        fallback = 'wrap a `print(...)` in `if int(os.environ.get("RANK", "0")) == 0:`'
        if self.shape(original) != ("bare", None):
            return self.manual(original, updated, f"not a statement of its own; {fallback}")
        if self.keeps_legacy_arguments(original, updated):
            return self.manual(original, updated, LEGACY_ARGUMENTS)
        var = "RANK"
        args = []
        for arg in updated.args:
            keyword = arg.keyword.value if arg.keyword else None
            if arg.star == "**" or keyword not in (None, "fd", "flush", "local"):
                return self.manual(original, updated, f"arguments not understood; {fallback}")
            if keyword == "local":
                local = literal(arg.value)
                if type(local) is not bool:
                    return self.manual(original, updated, f"computed `local=`; {fallback} (LOCAL_RANK when local)")
                var = "LOCAL_RANK" if local else "RANK"
                continue
            if keyword == "fd":
                arg = arg.with_changes(keyword=cst.Name("file"))
            args.append(arg)
        if args and len(args) != len(updated.args):
            args[-1] = args[-1].with_changes(comma=updated.args[-1].comma)
        call = updated.with_changes(func=cst.Name("print"), args=args)
        return self.replace_with(original, [f"if {self.env_int(var)} == 0:", f"\t{self.code_at(call, 1)}"])


# ----- NM123: rendezvous --------------------------------------------------------------------------------
@register
class RendezvousToBarrier(DistributedRule):
    """xm.rendezvous(tag) -> dist.barrier(), when a process group exists."""

    meta = RuleMeta(
        "NM123",
        "xm.rendezvous() -> dist.barrier()",
        safety=SAFE,
        risks=frozenset({"collectives"}),
        summary="A rendezvous without a payload is a barrier; the guard keeps single-process runs working.",
        docs=(DOCS_DIST_API, DOCS_DISTRIBUTED),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                'xm.rendezvous("checkpoint_saved")\n'
            ),
            after=(
                "import torch.distributed as dist\n\n"
                "if dist.is_initialized():\n"
                "    dist.barrier()\n"
            ),
        ),
    )
    calls = {f"{XM}.rendezvous": "to_barrier"}

    def to_barrier(self, original: cst.Call, updated: cst.Call, qname: str):
        gather = (
            "exchange objects with `payloads = [None] * dist.get_world_size()` then "
            "`dist.all_gather_object(payloads, payload)`"
        )
        bound = bind_args(updated, ("tag", "payload", "replicas"))
        if bound is None:
            return self.manual(original, updated, f"arguments not understood; use `dist.barrier()`, or {gather}")
        if not is_absent_or(bound, "payload", b"", ""):
            return self.manual(original, updated, f"rendezvous with a payload: {gather}")
        if not is_absent_or(bound, "replicas", [], (), None):
            return self.manual(
                original, updated, "rendezvous of some replicas: `dist.barrier(group=dist.new_group(replicas))`"
            )
        if self.shape(original) != ("bare", None):
            return self.manual(original, updated, f"its result (every rank's payload) is used: {gather}")
        if self.keeps_legacy_arguments(original, updated):
            return self.manual(original, updated, LEGACY_ARGUMENTS)
        dist = self.dist
        return self.replace_with(original, [f"if {dist}.is_initialized():", f"\t{dist}.barrier()"])


# ----- NM124: mesh_reduce --------------------------------------------------------------------------------
@register
class MeshReduceToAllGatherObject(DistributedRule):
    """x = xm.mesh_reduce(tag, data, reduce_fn) -> dist.all_gather_object + reduce_fn."""

    meta = RuleMeta(
        "NM124",
        "xm.mesh_reduce() -> dist.all_gather_object() + reduce_fn",
        safety=REVIEW,
        risks=frozenset({"collectives"}),
        summary=(
            "mesh_reduce gathered every rank's copy of `data` (tensors moved to CPU first) and applied "
            "reduce_fn to the list; all_gather_object does the gather without the CPU move."
        ),
        docs=(DOCS_DIST_API, DOCS_DISTRIBUTED),
        example=Example(
            before=(
                "import numpy as np\n"
                "import torch_xla.core.xla_model as xm\n\n"
                'accuracy = xm.mesh_reduce("accuracy", correct / total, np.mean)\n'
            ),
            after=(
                "import numpy as np\n"
                "import torch.distributed as dist\n\n"
                "# neuron-migrate(NM124): mesh_reduce moved tensors to CPU before reduce_fn, all_gather_object "
                "does not: check reduce_fn\n"
                "if dist.is_initialized():\n"
                "    gathered = [None] * dist.get_world_size()\n"
                "    dist.all_gather_object(gathered, correct / total)\n"
                "    accuracy = np.mean(gathered)\n"
                "else:\n"
                "    accuracy = np.mean([correct / total])\n"
            ),
        ),
    )
    calls = {f"{XM}.mesh_reduce": "to_all_gather_object"}

    def to_all_gather_object(self, original: cst.Call, updated: cst.Call, qname: str):
        fallback = (
            "write `parts = [None] * dist.get_world_size()`, `dist.all_gather_object(parts, data)`, "
            "then use `reduce_fn(parts)`"
        )
        bound = bind_args(updated, ("tag", "data", "reduce_fn"))
        shape = self.shape(original)
        if bound is None or "data" not in bound or "reduce_fn" not in bound:
            return self.manual(original, updated, f"arguments not understood; {fallback}")
        if shape is None or shape[0] == "bare":
            return self.manual(original, updated, f"its value is not assigned or returned; {fallback}")
        if self.keeps_legacy_arguments(original, updated):
            return self.manual(original, updated, LEGACY_ARGUMENTS)
        kind, target = shape
        store = "return " if kind == "return" else f"{code_of(target)} = "
        data = self.code_at(bound["data"].value, 1)
        reduce_fn = receiver(bound["reduce_fn"].value)
        gathered = self.fresh_name("gathered")
        dist = self.dist
        self.ctx.review(
            "mesh_reduce moved tensors to CPU before reduce_fn, all_gather_object does not: check reduce_fn"
        )
        return self.replace_with(
            original,
            [
                f"if {dist}.is_initialized():",
                f"\t{gathered} = [None] * {dist}.get_world_size()",
                f"\t{dist}.all_gather_object({gathered}, {data})",
                f"\t{store}{reduce_fn}({gathered})",
                "else:",
                f"\t{store}{reduce_fn}([{data}])",
            ],
        )


# xm collectives took `groups` as lists of replica ids; torch.distributed wants this rank's process group.
SUBGROUPS_STEP = (
    "replica groups: create them once on every rank, `group, _ = dist.new_subgroups_by_enumeration(groups)` "
    "(outside any loop), and pass `group=group`"
)


# ----- NM125 / NM127: all_reduce and the reduce-op constants -------------------------------------------
# xm.REDUCE_* values -> the torch.distributed.ReduceOp member
REDUCE_OPS = {"sum": "SUM", "mul": "PRODUCT", "and": "BAND", "or": "BOR", "min": "MIN", "max": "MAX"}
REDUCE_CONSTANTS = {f"{XM}.REDUCE_{name.upper()}": op for name, op in REDUCE_OPS.items()}


@register
class ReduceConstantToReduceOp(DistributedRule):
    """xm.REDUCE_SUM/MUL/AND/OR/MIN/MAX -> dist.ReduceOp.SUM/PRODUCT/BAND/BOR/MIN/MAX."""

    meta = RuleMeta(
        "NM127",
        "xm.REDUCE_* -> dist.ReduceOp.*",
        safety=SAFE,
        risks=frozenset({"collectives"}),
        summary="The reduce-type strings of torch_xla map one to one onto torch.distributed.ReduceOp.",
        docs=(DOCS_DIST_API,),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "OPS = {\"total\": xm.REDUCE_SUM, \"peak\": xm.REDUCE_MAX}\n"
            ),
            after=(
                "import torch.distributed as dist\n\n"
                "OPS = {\"total\": dist.ReduceOp.SUM, \"peak\": dist.ReduceOp.MAX}\n"
            ),
        ),
    )
    references = {name: "to_reduce_op" for name in REDUCE_CONSTANTS}

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # ids of the argument values of legacy calls: a constant there belongs to that call
        self.legacy_call_args: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        if any(_is_legacy(q) for q in self.ctx.qualified_names(node.func)):
            self.legacy_call_args.update(id(arg.value) for arg in node.args)

    def to_reduce_op(self, original, updated, qname: str):
        if id(original) in self.legacy_call_args:
            # The call's own rule migrates the op with it, or leaves call and op to a human as one:
            # a ReduceOp inside a legacy call would be wrong for the legacy API.
            self.ctx.answered_by_enclosing_call()
            return updated
        return keep_parens(self.ctx.expr(f"{self.dist}.ReduceOp.{REDUCE_CONSTANTS[qname]}"), updated)


def _is_reduce_constant_code(node: cst.BaseExpression) -> bool:
    """``xm.REDUCE_SUM`` (any module alias): a constant left in place inside a legacy call."""
    return isinstance(node, cst.Attribute) and f"{XM}.{node.attr.value}" in REDUCE_CONSTANTS


@register
class AllReduceToDist(DistributedRule):
    """xm.all_reduce(reduce_type, inputs, scale=, groups=) -> dist.all_reduce per tensor."""

    meta = RuleMeta(
        "NM125",
        "xm.all_reduce() -> dist.all_reduce()",
        safety=REVIEW,
        risks=frozenset({"collectives"}),
        summary=(
            "xm.all_reduce reduced a list in place, or returned a new tensor for a single one, and applied "
            "`scale` after the reduction; dist.all_reduce works in place on one tensor."
        ),
        docs=(DOCS_DIST_API, DOCS_DISTRIBUTED),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "total = xm.all_reduce(xm.REDUCE_SUM, loss, scale=1.0 / world_size)\n"
            ),
            after=(
                "import torch.distributed as dist\n\n"
                "# neuron-migrate(NM125): xm.all_reduce returned a new tensor for one input; "
                "check `loss` is not a list\n"
                "total = loss.clone()\n"
                "if dist.is_initialized():\n"
                "    dist.all_reduce(total, op=dist.ReduceOp.SUM)\n"
                "    total.mul_(1.0 / world_size)\n"
            ),
        ),
    )
    calls = {f"{XM}.all_reduce": "to_dist_all_reduce"}
    PARAMS = ("reduce_type", "inputs", "scale", "groups", "pin_layout")

    def to_dist_all_reduce(self, original: cst.Call, updated: cst.Call, qname: str):
        fallback = (
            "use `dist.all_reduce(tensor, op=dist.ReduceOp.SUM)` per tensor (in place), then `tensor.mul_(scale)`"
        )
        bound = bind_args(updated, self.PARAMS)
        before = bind_args(original, self.PARAMS)
        if bound is None or before is None or "reduce_type" not in bound or "inputs" not in bound:
            return self.manual(original, updated, f"arguments not understood; {fallback}")
        if not is_absent_or(bound, "groups", None, []):
            return self.manual(original, updated, f"{SUBGROUPS_STEP} to dist.all_reduce; {fallback}")
        shape = self.shape(original)
        if shape is None:
            return self.manual(original, updated, f"used inside an expression; {fallback}")
        if self.keeps_legacy_arguments(original, updated):
            return self.manual(original, updated, LEGACY_ARGUMENTS)
        op, op_known = self.reduce_op(before["reduce_type"].value, bound["reduce_type"].value)
        scale = None if is_absent_or(bound, "scale", 1.0, 1) else code_of(bound["scale"].value)
        inputs = bound["inputs"].value
        dist = self.dist
        check_op = "" if op_known else f"; check `{op}` is a dist.ReduceOp"

        if shape[0] == "bare":
            tensors = inputs.elements if isinstance(inputs, (cst.List, cst.Tuple)) else None
            if tensors is not None and len(tensors) == 1 and not isinstance(tensors[0], cst.StarredElement):
                # One tensor in a literal list: reduce it in place, no loop needed.
                self.ctx.review(f"skipped while no process group is initialized: init it first{check_op}")
                lines = self.reduce_lines(dist, receiver(tensors[0].value), op, scale, depth=0)
                return self.replace_with(original, lines)
            tensor = self.fresh_name("tensor")
            lines = self.reduce_lines(dist, tensor, op, scale, depth=1)
            self.ctx.review(
                "the in-place loop assumes a list of tensors; for gradients prefer DDP, which buckets them" + check_op
            )
            loop = f"\tfor {tensor} in {self.code_at(inputs, 1)}:"
            return self.replace_with(original, [lines[0], loop, *lines[1:]])

        kind, target = shape
        simple_target = kind == "return" or isinstance(target, (cst.Name, cst.Attribute, cst.Subscript))
        if isinstance(inputs, (cst.List, cst.Tuple)) and simple_target:
            return self.reduce_list(original, inputs, kind, target, op, scale, check_op)
        if isinstance(inputs, (cst.List, cst.Tuple)) or not simple_target:
            return self.manual(original, updated, f"not of the form `y = xm.all_reduce(op, x)`; {fallback}")
        result = self.fresh_name("reduced") if kind == "return" else code_of(target)
        lines = [f"{result} = {receiver(inputs)}.clone()", *self.reduce_lines(dist, result, op, scale, depth=0)]
        if kind == "return":
            lines.append(f"return {result}")
        what = f"`{code_of(inputs)}`" if is_plain_reference(inputs) else "the input"
        self.ctx.review(f"xm.all_reduce returned a new tensor for one input; check {what} is not a list{check_op}")
        return self.replace_with(original, lines)

    def reduce_list(self, original, inputs, kind, target, op, scale, check_op):
        """``y = xm.all_reduce(op, [a, b])``: the list was reduced in place and returned itself."""
        result = self.fresh_name("reduced") if kind == "return" else code_of(target)
        tensor = self.fresh_name("tensor")
        lines = self.reduce_lines(self.dist, tensor, op, scale, depth=1)
        lines = [f"{result} = {self.code_at(inputs, 0)}", lines[0], f"\tfor {tensor} in {result}:", *lines[1:]]
        if kind == "return":
            lines.append(f"return {result}")
        self.ctx.review(f"skipped while no process group is initialized: init it first{check_op}")
        return self.replace_with(original, lines)

    def reduce_op(self, before: cst.BaseExpression, after: cst.BaseExpression) -> tuple[str, bool]:
        """The ``op=`` code, and whether it is certainly a ReduceOp (a known constant or string)."""
        constant = self.ctx.any_qualified_name(before, REDUCE_CONSTANTS.keys())
        if constant is not None:
            return f"{self.dist}.ReduceOp.{REDUCE_CONSTANTS[constant]}", True
        value = literal(before)
        if isinstance(value, str) and value in REDUCE_OPS:
            return f"{self.dist}.ReduceOp.{REDUCE_OPS[value]}", True
        return code_of(after), False

    @staticmethod
    def reduce_lines(dist: str, tensor: str, op: str, scale: str | None, depth: int) -> list[str]:
        # Scaling stays under the guard: with one process xm.all_reduce returned the input unscaled.
        inner = "\t" * (depth + 1)
        lines = [f"if {dist}.is_initialized():", f"{inner}{dist}.all_reduce({tensor}, op={op})"]
        if scale is not None:
            lines.append(f"{inner}{tensor}.mul_({scale})")
        return lines


# ----- NM126: all_gather ------------------------------------------------------------------------------------
@register
class AllGatherToAllGatherSingle(DistributedRule):
    """y = xm.all_gather(x) (dim 0) -> dist.all_gather_single into a new tensor; y = xm.all_gather(x, dim=d)
    -> dist.all_gather into one part per rank, then torch.cat on d.

    PyTorch 2.13, the oldest release TorchNeuron runs on, deprecates all_gather_into_tensor in
    favour of all_gather_single (same collective, same arguments).
    """

    meta = RuleMeta(
        "NM126",
        "xm.all_gather() -> dist.all_gather_single()",
        safety=REVIEW,
        risks=frozenset({"collectives"}),
        summary=(
            "Along dim 0 the gathered tensor is every rank's tensor stacked in rank order, which is what "
            "all_gather_single writes; along another dim it is dist.all_gather's parts concatenated on that "
            "dim. Replica groups, `output=` and lists are left to a human."
        ),
        docs=(DOCS_DIST_API, DOCS_DISTRIBUTED),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "all_preds = xm.all_gather(preds)\n"
            ),
            after=(
                "import torch.distributed as dist\n\n"
                "# neuron-migrate(NM126): all_gather_single needs one tensor of the same shape on every "
                "rank (xm.all_gather also took lists)\n"
                "if dist.is_initialized():\n"
                "    all_preds = preds.new_empty((dist.get_world_size() * preds.shape[0], *preds.shape[1:]))\n"
                "    dist.all_gather_single(all_preds, preds)\n"
                "else:\n"
                "    all_preds = preds.clone()\n"
            ),
        ),
    )
    calls = {f"{XM}.all_gather": "to_all_gather_single"}
    PARAMS = ("value", "dim", "groups", "output", "pin_layout")

    def to_all_gather_single(self, original: cst.Call, updated: cst.Call, qname: str):
        fallback = (
            "gather with `parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]`, "
            "`dist.all_gather(parts, x)`, then `torch.cat(parts, dim=dim)`"
        )
        bound = bind_args(updated, self.PARAMS)
        if bound is None or "value" not in bound:
            return self.manual(original, updated, f"arguments not understood; {fallback}")
        if not is_absent_or(bound, "groups", None, []):
            return self.manual(original, updated, f"{SUBGROUPS_STEP} to dist.all_gather; {fallback}")
        if not is_absent_or(bound, "output", None):
            return self.manual(original, updated, "into `output`: `dist.all_gather_single(output, value)`")
        shape = self.shape(original)
        value = bound["value"].value
        if shape is None or shape[0] == "bare" or isinstance(value, (cst.List, cst.Tuple)):
            return self.manual(original, updated, f"not of the form `y = xm.all_gather(x)`; {fallback}")
        if self.keeps_legacy_arguments(original, updated):
            return self.manual(original, updated, LEGACY_ARGUMENTS)
        kind, target = shape
        lines = []
        if not is_plain_reference(value):
            # The input is named several times below; evaluate it once.
            local = self.fresh_name("local_tensor")
            lines.append(f"{local} = {code_of(value)}")
            source = local
        else:
            source = code_of(value)
        direct = kind == "assign" and isinstance(target, cst.Name) and target.value not in names_in(value)
        result = code_of(target) if direct else self.fresh_name("gathered")
        dim = None if is_absent_or(bound, "dim", 0) else code_of(bound["dim"].value)
        lines += [
            f"if {self.dist}.is_initialized():",
            *(self.gather_single(result, source) if dim is None else self.gather_parts(result, source, dim)),
            "else:",
            f"\t{result} = {source}.clone()",
        ]
        if not direct:
            lines.append(f"return {result}" if kind == "return" else f"{code_of(target)} = {result}")
        collective = "all_gather_single" if dim is None else "dist.all_gather"
        self.ctx.review(
            f"{collective} needs one tensor of the same shape on every rank (xm.all_gather also took lists)"
        )
        return self.replace_with(original, lines)

    def gather_single(self, result: str, source: str) -> list[str]:
        """Along dim 0 the output is the ranks' tensors stacked in rank order: one all_gather_single."""
        dist = self.dist
        return [
            f"\t{result} = {source}.new_empty(({dist}.get_world_size() * {source}.shape[0], *{source}.shape[1:]))",
            f"\t{dist}.all_gather_single({result}, {source})",
        ]

    def gather_parts(self, result: str, source: str, dim: str) -> list[str]:
        """Along another dim: one part per rank, concatenated in rank order on ``dim``."""
        dist, torch = self.dist, self.torch
        parts = self.fresh_name("parts")
        return [
            f"\t{parts} = [{torch}.empty_like({source}) for _ in range({dist}.get_world_size())]",
            f"\t{dist}.all_gather({parts}, {source})",
            f"\t{result} = {torch}.cat({parts}, dim={dim})",
        ]


# ----- NM133: the gradients an all-reduce averages ------------------------------------------------------
@register
class FetchGradientsToComprehension(DistributedRule):
    """xm._fetch_gradients(optimizer) -> the ``.grad.data`` of its parameters that have a gradient."""

    meta = RuleMeta(
        "NM133",
        "xm._fetch_gradients() -> the gradients of the optimizer's param groups",
        safety=SAFE,
        risks=frozenset({"collectives"}),
        summary=(
            "xm._fetch_gradients walked the optimizer's param groups and listed `p.grad.data` of every "
            "parameter with a gradient; the comprehension does the same in plain PyTorch."
        ),
        docs=("https://pytorch.org/docs/stable/optim.html",),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "gradients = xm._fetch_gradients(optimizer)\n"
            ),
            after=(
                'gradients = [p.grad.data for group in optimizer.param_groups for p in group["params"] '
                "if p.grad is not None]\n"
            ),
        ),
    )
    calls = {f"{XM}._fetch_gradients": "to_comprehension"}

    def to_comprehension(self, original: cst.Call, updated: cst.Call, qname: str):
        bound = bind_args(updated, ("optimizer",))
        if bound is None or "optimizer" not in bound:
            return self.manual(
                original,
                updated,
                'arguments not understood; use `[p.grad.data for group in optimizer.param_groups for p in '
                'group["params"] if p.grad is not None]`',
            )
        # The comprehension's own scope keeps `group` and `p` from touching the caller's names.
        optimizer = receiver(bound["optimizer"].value)
        code = (
            f'[p.grad.data for group in {optimizer}.param_groups for p in group["params"] if p.grad is not None]'
        )
        return keep_parens(self.ctx.expr(code), updated)


# ----- NM134: collective_broadcast -------------------------------------------------------------------------
BROADCAST_IN_PLACE = "broadcast in place: `for t in tensors: dist.broadcast(t, src=root_ordinal)`"


@register
class CollectiveBroadcastToBroadcast(DistributedRule):
    """xm.collective_broadcast(tensors, root_ordinal=r) -> dist.broadcast(t, src=r) for each tensor."""

    meta = RuleMeta(
        "NM134",
        "xm.collective_broadcast() -> dist.broadcast()",
        safety=REVIEW,
        risks=frozenset({"collectives"}),
        summary=(
            "collective_broadcast overwrote each tensor of the list with the root replica's values, in place "
            "(zeroing the others and summing); dist.broadcast copies the root rank's tensor the same way."
        ),
        docs=(DOCS_DIST_API, DOCS_DISTRIBUTED),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "xm.collective_broadcast([seed], root_ordinal=0)\n"
            ),
            after=(
                "import torch.distributed as dist\n\n"
                "# neuron-migrate(NM134): skipped while no process group is initialized: init it first\n"
                "if dist.is_initialized():\n"
                "    dist.broadcast(seed, src=0)\n"
            ),
        ),
    )
    calls = {f"{XM}.collective_broadcast": "to_broadcast"}
    PARAMS = ("tensors", "root_ordinal", "groups", "pin_layout")

    def to_broadcast(self, original: cst.Call, updated: cst.Call, qname: str):
        bound = bind_args(updated, self.PARAMS)
        if bound is None or "tensors" not in bound:
            return self.manual(original, updated, f"arguments not understood; {BROADCAST_IN_PLACE}")
        if not is_absent_or(bound, "groups", None, []):
            return self.manual(
                original,
                updated,
                "replica groups: build each with `dist.new_group(ranks)` and pass this rank's as `group=` "
                f"(`src` stays the global rank root_ordinal); {BROADCAST_IN_PLACE}",
            )
        if self.shape(original) != ("bare", None):
            return self.manual(original, updated, f"its value (None) is used; {BROADCAST_IN_PLACE}")
        if self.keeps_legacy_arguments(original, updated):
            return self.manual(original, updated, LEGACY_ARGUMENTS)
        # Without groups the root ordinal is the global rank.
        root = code_of(bound["root_ordinal"].value) if "root_ordinal" in bound else "0"
        tensors = bound["tensors"].value
        dist = self.dist
        elements = tensors.elements if isinstance(tensors, (cst.List, cst.Tuple)) else None
        if elements is not None and len(elements) == 1 and not isinstance(elements[0], cst.StarredElement):
            self.ctx.review("skipped while no process group is initialized: init it first")
            tensor = receiver(elements[0].value)
            return self.replace_with(original, [f"if {dist}.is_initialized():", f"\t{dist}.broadcast({tensor}, src={root})"])
        tensor = self.fresh_name("tensor")
        check = "" if elements is not None else "the in-place loop assumes a list of tensors; "
        self.ctx.review(f"{check}skipped while no process group is initialized: init it first")
        return self.replace_with(
            original,
            [
                f"if {dist}.is_initialized():",
                f"\tfor {tensor} in {self.code_at(tensors, 1)}:",
                f"\t\t{dist}.broadcast({tensor}, src={root})",
            ],
        )


# ----- NM128: process group backend ------------------------------------------------------------------------
INIT_PROCESS_GROUP = frozenset(
    {"torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group"}
)
# xmp.spawn's workers joined the collectives without a process group; torchrun's processes join
# the "neuron" one. Plain `python` (no WORLD_SIZE) keeps running one process without it.
WORKER_INIT = (
    '# torchrun started this process: join the other ranks, as the workers of {launcher} did',
    'if "WORLD_SIZE" in {os}.environ and not {dist}.is_initialized():',
    '\t{dist}.init_process_group("neuron")',
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
        self.depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self.depth == 0:
            self.functions[node.name.value] = node
            if isinstance(node.body, cst.IndentedBlock) and any(map(self._xla_init, node.body.body)):
                self.joining.add(node.name.value)
        self.depth += 1

    def leave_FunctionDef(self, original: cst.FunctionDef) -> None:
        self.depth -= 1

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

    def worker_defs(self) -> dict[int, str]:
        """id(def) -> its launcher, for the workers that get the process group at their start: none
        when the file initialises one some way this rule does not rewrite (its own backend), and not
        for a worker that starts with its own init_process_group("xla")."""
        if self.other_inits:
            return {}
        return {
            id(self.functions[name]): launcher
            for name, launcher in self.workers.items()
            if name in self.functions and name not in self.joining
        }


def _bare_call(statement: cst.BaseStatement) -> cst.Call | None:
    """The call that is the whole of a one-statement line (``f(...)``), else None."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    return small.value if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) else None


def _xla_backend(call: cst.Call) -> bool:
    bound = bind_args(call, XlaBackendToNeuron.PARAMS, other_keywords=True)
    backend = literal(bound["backend"].value) if bound and "backend" in bound else None
    return isinstance(backend, str) and backend.lower() == "xla"


def process_group_plan(ctx) -> _ProcessGroupPlan:
    if "process_group_plan" not in ctx.facts:
        plan = _ProcessGroupPlan(ctx)
        walk(ctx.module, plan)  # the facts gathered do not depend on the order of visits
        ctx.facts["process_group_plan"] = plan
    return ctx.facts["process_group_plan"]  # type: ignore[return-value]


def initialises_process_group(ctx) -> bool:
    """Whether the migrated file starts a process group (its own call, or one added for its workers)."""
    plan = process_group_plan(ctx)
    return bool(plan.xla_inits or plan.other_inits or plan.worker_defs())


@register
class XlaBackendToNeuron(DistributedRule):
    """dist.init_process_group("xla", init_method="xla://" or "pjrt://") -> dist.init_process_group("neuron").

    The workers of xmp.spawn / torch_xla.launch reduced gradients and ran collectives without any
    process group; on TorchNeuron they need one, so the worker function starts by joining it (once:
    the file's own "xla" init calls become guarded by ``dist.is_initialized()``).
    """

    meta = RuleMeta(
        "NM128",
        'process group backend "xla" -> "neuron"',
        safety=SAFE,
        risks=frozenset({"launch", "collectives"}),
        summary=(
            'TorchNeuron registers the "neuron" backend; under torchrun the default env:// init method '
            "replaces xla:// and pjrt://, and the side-effect import of torch_xla.distributed.xla_backend goes. A worker "
            "started by xmp.spawn / torch_xla.launch initialises the process group at its start when "
            "torchrun launched it."
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
                "import torch.distributed as dist\n\n"
                'dist.init_process_group("neuron")\n'
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
        if id(original) in plan.xla_inits and plan.worker_defs():
            # The worker has joined the process group already when torchrun started it.
            dist = self.dist
            self.ctx.note("guarded: the worker function initialises the process group at its start")
            return self.replace_with(original, [f"if not {dist}.is_initialized():", f"\t{self.code_at(call, 1)}"])
        return call

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef):
        launcher = process_group_plan(self.ctx).worker_defs().get(id(original))
        if launcher is None or not isinstance(updated.body, cst.IndentedBlock):
            return updated
        os_module = self.ctx.require_import("os")
        comment, *lines = (line.format(launcher=launcher, os=os_module, dist=self.dist) for line in WORKER_INIT)
        text = "".join(line.replace("\t", self.indent) + "\n" for line in lines)
        [guard] = self.ctx.statements(text)
        guard = guard.with_changes(leading_lines=[cst.EmptyLine(comment=cst.Comment(comment))])
        body = list(updated.body.body)
        position = 0
        while position < len(body) and _leads_function(body[position], position):
            position += 1
        body.insert(position, guard)
        self.ctx.note(f'the worker of {launcher} initialises the "neuron" process group when torchrun started it')
        self.ctx.confirm_safe()
        return updated.with_changes(body=updated.body.with_changes(body=body))

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


def _leads_function(statement: cst.BaseStatement, position: int) -> bool:
    """The docstring and ``global`` / ``nonlocal`` lines stay first in a function body."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    small = statement.body[0]
    docstring = position == 0 and isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString)
    return docstring or isinstance(small, (cst.Global, cst.Nonlocal))


# ----- NM129: the other collectives ------------------------------------------------------------------------
BROADCAST_MASTER_PARAM = (f"{XM}.broadcast_master_param", "torch_xla.experimental.pjrt.broadcast_master_param")
BROADCAST_NEXT_STEP = (
    "copy rank 0's weights: `for t in [*model.parameters(), *model.buffers()]: dist.broadcast(t.data, src=0)`, "
    "or wrap the model in DDP, which does it at construction"
)
DDP_NAMES = frozenset(
    {"torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel"}
)


@register
class OtherCollectives(DistributedRule):
    """reduce_scatter, all_to_all, collective_permute, send/recv: TODO with the torch.distributed call.

    ``xm.broadcast_master_param(model)`` is deleted when the file wraps models in DDP, whose
    constructor broadcasts rank 0's parameters and buffers.
    """

    meta = RuleMeta(
        "NM129",
        "other torch_xla collectives -> torch.distributed",
        safety=MANUAL,
        risks=frozenset({"collectives"}),
        summary="Argument semantics differ (scatter dims, channel ids, replica groups): a human writes the call.",
        docs=(DOCS_DIST_API, DOCS_DISTRIBUTED),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "shard = xm.reduce_scatter(xm.REDUCE_SUM, grad, 1.0, 0, world_size)\n"
            ),
            after=(
                "import torch_xla.core.xla_model as xm\n\n"
                "# TODO(neuron-migrate NM129): use `dist.reduce_scatter_single(out, input, op=dist.ReduceOp.SUM)` "
                "(scatters dim 0 into world_size parts; move `scatter_dim` to dim 0 first), then `out.mul_(scale)`\n"
                "shard = xm.reduce_scatter(xm.REDUCE_SUM, grad, 1.0, 0, world_size)\n"
            ),
        ),
    )
    rows = ROWS
    calls = {name: "broadcast_master_param" for name in BROADCAST_MASTER_PARAM}

    _uses_ddp: bool | None = None

    def broadcast_master_param(self, original: cst.Call, updated: cst.Call, qname: str):
        if not self.uses_ddp() or self.shape(original) != ("bare", None):
            return self.manual(original, updated, BROADCAST_NEXT_STEP)
        if self.keeps_legacy_arguments(original, updated):
            return self.manual(original, updated, LEGACY_ARGUMENTS)
        self.ctx.note("xm.broadcast_master_param() removed: DDP broadcasts rank 0's weights")
        self.ctx.review("removed: DDP broadcasts rank 0's weights when it wraps the model; wrap it after loading them")
        return StatementReplacement([], fallback=BROADCAST_NEXT_STEP)

    def uses_ddp(self) -> bool:
        if self._uses_ddp is None:
            finder = _DdpFinder(self.ctx)
            self.ctx.module.visit(finder)
            self._uses_ddp = finder.found
        return self._uses_ddp


class _DdpFinder(cst.CSTVisitor):
    """Does any name in the file resolve to torch's DistributedDataParallel?"""

    def __init__(self, ctx) -> None:
        super().__init__()
        self.qnames = ctx.wrapper.resolve(QualifiedNameProvider)
        self.found = False

    def visit_Name(self, node: cst.Name) -> bool:
        self._check(node)
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if node.attr.value == "DistributedDataParallel":
            self._check(node)
        return not self.found

    def _check(self, node) -> None:
        if self.found:
            return
        self.found = bool(imported_names(self.qnames, node) & DDP_NAMES)


# ----- NM130: xm.save --------------------------------------------------------------------------------------
SAVE_CHECK = 'xm.save moved tensors to CPU first; load with `map_location="cpu"` or save a CPU copy of the state'
SPACE = cst.SimpleWhitespace(" ")


@register
class SaveToTorchSave(DistributedRule):
    """xm.save(data, path, master_only=True, global_master=False) -> torch.save under a rank guard."""

    meta = RuleMeta(
        "NM130",
        "xm.save() -> torch.save() on the writing rank",
        safety=REVIEW,
        risks=frozenset({"checkpoint-format"}),
        summary=(
            "xm.save wrote on each host's rank 0 by default (LOCAL_RANK), on global rank 0 with "
            "global_master=True, on every rank with master_only=False, and moved tensors to CPU first."
        ),
        docs=(DOCS_CHANGES, "https://pytorch.org/docs/stable/generated/torch.save.html"),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                'xm.save(model.state_dict(), "checkpoint.pt")\n'
            ),
            after=(
                "import os\n"
                "import torch\n\n"
                "# neuron-migrate(NM130): xm.save moved tensors to CPU first; load with "
                '`map_location="cpu"` or save a CPU copy of the state\n'
                'if int(os.environ.get("LOCAL_RANK", "0")) == 0:\n'
                '    torch.save(model.state_dict(), "checkpoint.pt")\n'
            ),
        ),
    )
    calls = {f"{XM}.save": "to_torch_save"}
    PARAMS = ("data", "file_or_path", "master_only", "global_master", "sync")

    def to_torch_save(self, original: cst.Call, updated: cst.Call, qname: str):
        fallback = 'write `torch.save(data, path)` under `if int(os.environ.get("LOCAL_RANK", "0")) == 0:`'
        bound = bind_args(updated, self.PARAMS)
        if bound is None or "data" not in bound or "file_or_path" not in bound:
            return self.manual(original, updated, f"arguments not understood; {fallback}")
        master_only = arg_value(bound, "master_only", True)
        global_master = arg_value(bound, "global_master", False)
        if type(master_only) is not bool or type(global_master) is not bool:
            return self.manual(original, updated, f"computed master_only / global_master; {fallback} (or RANK)")
        if self.shape(original) != ("bare", None):
            return self.manual(original, updated, f"not a statement of its own; {fallback}")
        if self.keeps_legacy_arguments(original, updated):
            return self.manual(original, updated, LEGACY_ARGUMENTS)
        data, path = bound["data"], bound["file_or_path"]
        separator = data.comma if isinstance(data.comma, cst.Comma) else cst.Comma(whitespace_after=SPACE)
        args = [
            data.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT, comma=separator),
            path.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT, comma=updated.args[-1].comma),
        ]
        call = updated.with_changes(func=self.ctx.expr(f"{self.torch}.save"), args=args)
        self.ctx.review(SAVE_CHECK)
        if not master_only:
            # Every rank writes, as before; the path must differ per rank, as it had to.
            return self.replace_with(original, [self.code_at(call, 0)])
        var = "RANK" if global_master else "LOCAL_RANK"
        return self.replace_with(original, [f"if {self.env_int(var)} == 0:", f"\t{self.code_at(call, 1)}"])


# ----- NM131 / NM132: RNG ------------------------------------------------------------------------------------
@register
class SeedToTorchManualSeed(DistributedRule):
    """xm.set_rng_state(seed) / torch_xla.manual_seed(seed) -> torch.manual_seed(seed)."""

    meta = RuleMeta(
        "NM131",
        "xm.set_rng_state() / torch_xla.manual_seed() -> torch.manual_seed()",
        safety=SAFE,
        risks=frozenset({"rng"}),
        summary="torch.manual_seed seeds the CPU and every device generator, the neuron one included.",
        docs=(DOCS_MODULE, "https://pytorch.org/docs/stable/generated/torch.manual_seed.html"),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "xm.set_rng_state(args.seed)\n"
            ),
            after=(
                "import torch\n\n"
                "torch.manual_seed(args.seed)\n"
            ),
        ),
    )
    calls = {
        f"{XM}.set_rng_state": "to_manual_seed",
        "torch_xla.manual_seed": "to_manual_seed",
        "torch_xla.torch_xla.manual_seed": "to_manual_seed",
    }

    def to_manual_seed(self, original: cst.Call, updated: cst.Call, qname: str):
        bound = bind_args(updated, ("seed", "device"))
        if bound is None or "seed" not in bound:
            return self.manual(original, updated, "arguments not understood; use `torch.manual_seed(seed)`")
        # The device argument goes: torch.manual_seed seeds every device.
        call = without_args(updated, {"device"}, ("seed", "device"))
        return call.with_changes(func=self.ctx.expr(f"{self.torch}.manual_seed"))


@register
class GetRngStateManual(DistributedRule):
    """xm.get_rng_state() returned the device seed as an int; there is no int-seed query now."""

    meta = RuleMeta(
        "NM132",
        "xm.get_rng_state() needs a human",
        safety=MANUAL,
        risks=frozenset({"rng"}),
        summary="xm.get_rng_state() returned an int seed; the torch.neuron RNG state is a tensor.",
        docs=(DOCS_MODULE,),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "state = xm.get_rng_state()\n"
            ),
            after=(
                "import torch_xla.core.xla_model as xm\n\n"
                "# TODO(neuron-migrate NM132): use `torch.neuron.get_rng_state()` (a state tensor, not the int "
                "seed xm.get_rng_state returned) and restore it with `torch.neuron.set_rng_state(state)`\n"
                "state = xm.get_rng_state()\n"
            ),
        ),
    )
    rows = ROWS


# ----- NM135: SPMD ----------------------------------------------------------------------------------------------


@register
class SpmdManual(DistributedRule):
    """PyTorch/XLA SPMD (GSPMD sharding annotations) -> DTensor on a DeviceMesh, by hand."""

    meta = RuleMeta(
        "NM135",
        "torch_xla SPMD needs a redesign with DTensor / DeviceMesh",
        safety=MANUAL,
        risks=frozenset({"collectives", "performance"}),
        summary=(
            "GSPMD sharding annotations have no TorchNeuron equivalent; the native way is DTensor "
            "(distribute_tensor, parallelize_module) on a DeviceMesh of the neuron device."
        ),
        docs=(DOCS_CHANGES, DOCS_DISTRIBUTED, DOCS_DTENSOR),
        example=Example(
            before=(
                "import torch_xla.distributed.spmd as xs\n\n"
                'xs.mark_sharding(weight, mesh, ("model", None))\n'
            ),
            after=(
                "import torch_xla.distributed.spmd as xs\n\n"
                f"# TODO(neuron-migrate NM135): {TENSOR_STEP}\n"
                'xs.mark_sharding(weight, mesh, ("model", None))\n'
            ),
        ),
    )
    follow_up_todos = True
    rows = ROWS


# ----- NM136: XLA FSDP --------------------------------------------------------------------------------------------


@register
class XlaFsdpManual(DistributedRule):
    """torch_xla's XlaFullyShardedDataParallel and checkpoint consolidation -> FSDP2, by hand."""

    meta = RuleMeta(
        "NM136",
        "XLA FSDP needs a port to FSDP2 (fully_shard)",
        safety=MANUAL,
        risks=frozenset({"collectives", "checkpoint-format"}),
        summary=(
            "Wrapping policy, optimizer construction order and sharded checkpoints differ; FSDP2 "
            "`fully_shard` on a neuron DeviceMesh is the supported replacement."
        ),
        docs=(DOCS_DISTRIBUTED, DOCS_TUTORIAL, DOCS_FSDP2, DOCS_DCP),
        example=Example(
            before=(
                "from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP\n\n"
                "model = FSDP(model)\n"
            ),
            after=(
                "from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP\n\n"
                f"# TODO(neuron-migrate NM136): {WRAP_STEP}\n"
                "model = FSDP(model)\n"
            ),
        ),
    )
    rows = ROWS
