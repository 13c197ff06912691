"""What the xla_distributed rules share: helpers, constants and base classes."""

from __future__ import annotations

import re
from collections.abc import Sequence

import libcst as cst

from neuron_migrate import rules as rule_families
from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import Rule, StatementReplacement
from neuron_migrate.rules.calls import literal, name_nodes, names_in
from neuron_migrate.rules.tables.xla_distributed import XM, XR

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
ENV_DEFAULTS = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1", "GROUP_RANK": "0"}
LEGACY_ARGUMENTS = "an argument still uses a legacy API: migrate it first, then run neuron-migrate again"
# The review of a collective that now runs only under `if dist.is_initialized():`.
SKIPPED_UNINITIALIZED = "skipped while no process group is initialized: init it first"
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

    def bind_core(self) -> str:
        """The statement that puts this rank on its own NeuronCore.

        Every torchrun process sees all the cores of its host and starts on core 0, as with CUDA:
        PyTorch's own DeviceMesh binds a rank with ``set_device(LOCAL_RANK)`` when nothing did, and
        transformers and accelerate take the current device (``device_map="neuron"`` and
        ``torch.device("neuron")`` name no index). The binding goes right after the process group
        starts, before the program's first tensor reaches the device.
        """
        return f"{self.torch}.neuron.set_device({self.env_int('LOCAL_RANK')})"

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
        self.ctx.manual(self.meta, original, message)
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
    # the index of this host among the hosts: torchrun's node rank
    f"{XR}.host_index": "GROUP_RANK",
}
# xm collectives took `groups` as lists of replica ids; torch.distributed wants this rank's process group.
SUBGROUPS_STEP = (
    "replica groups: create them once on every rank, `group, _ = dist.new_subgroups_by_enumeration(groups)` "
    "(outside any loop), and pass `group=group`"
)
# ----- NM125 / NM127: all_reduce and the reduce-op constants -------------------------------------------
# xm.REDUCE_* values -> the torch.distributed.ReduceOp member
REDUCE_OPS = {"sum": "SUM", "mul": "PRODUCT", "and": "BAND", "or": "BOR", "min": "MIN", "max": "MAX"}
REDUCE_CONSTANTS = {f"{XM}.REDUCE_{name.upper()}": op for name, op in REDUCE_OPS.items()}


def _is_reduce_constant_code(node: cst.BaseExpression) -> bool:
    """``xm.REDUCE_SUM`` (any module alias): a constant left in place inside a legacy call."""
    return isinstance(node, cst.Attribute) and f"{XM}.{node.attr.value}" in REDUCE_CONSTANTS


# ----- NM134: collective_broadcast -------------------------------------------------------------------------
BROADCAST_IN_PLACE = "broadcast in place: `for t in tensors: dist.broadcast(t, src=root_ordinal)`"
# ----- NM128: process group backend ------------------------------------------------------------------------
INIT_PROCESS_GROUP = frozenset(
    {"torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group"}
)
# xmp.spawn's workers joined the collectives without a process group; torchrun's processes join
# the "neuron" one. Plain `python` (no WORLD_SIZE) keeps running one process without it.
WORKER_INIT = (
    '# torchrun started this process: join the other ranks on its own NeuronCore, as the workers of {launcher} did',
    'if "WORLD_SIZE" in {os}.environ and not {dist}.is_initialized():',
    '\t{dist}.init_process_group("neuron")',
    '\t{bind}',
)


def _bare_call(statement: cst.BaseStatement) -> cst.Call | None:
    """The call that is the whole of a one-statement line (``f(...)``), else None."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    return small.value if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) else None


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


class _DdpFinder(cst.CSTVisitor):
    """Does any name in the file resolve to torch's DistributedDataParallel?"""

    def __init__(self, ctx) -> None:
        super().__init__()
        self.qnames = ctx.qualified
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
        self.found = bool(self.qnames.imported(node) & DDP_NAMES)


# ----- NM130: xm.save --------------------------------------------------------------------------------------
SAVE_CHECK = 'xm.save moved tensors to CPU first; load with `map_location="cpu"` or save a CPU copy of the state'
SPACE = cst.SimpleWhitespace(" ")
