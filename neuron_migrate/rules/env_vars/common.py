"""What the env_vars rules share: helpers, constants and base classes."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import libcst as cst
from libcst.metadata import ScopeProvider

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import Edit, Fact, Rule, StatementReplacement
from neuron_migrate.rules.calls import name_nodes

DOCS_ENV = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/env-vars.html"
DOCS_BF16 = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/appnotes/torch-neuronx/"
    "migration-from-xla-downcast-bf16.html"
)
DOCS_LEGACY_ENV = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/torch-neuronx/"
    "api-reference-guide/training/torch-neuron-envvars.html"
)
DOCS_MEMORY = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/guidelines-memory-management.html"
)
# What to do with a variable.
DELETE = "delete"  # the setting means nothing on TorchNeuron: remove it
# It means nothing on TorchNeuron either, but what it did must now be done in code: remove it, and a
# TODO marker in its place names the code change.
DELETE_BY_HAND = "delete-todo"
BY_HAND = "manual"  # leave it and say what to do instead
RENAME = "rename"  # same meaning under a new name (a review says what differs)
KEEP = "keep"  # still read, but some of its value is XLA-era: drop that part (with a review)


@dataclass(frozen=True)
class EnvAction:
    rule: str
    kind: str
    message: str
    rename_to: str = ""
    # KEEP: flags to drop from the value; a flag ending in "=" takes a value ("--cache_dir=x"
    # or "--cache_dir x"). The action applies only when one of them is present.
    drop_flags: tuple[str, ...] = ()
    # RENAME: a URL value (s3://...) cannot follow the rename; it becomes a manual step.
    remote_message: str = ""


_XLA_DEBUG = EnvAction(
    "NM501",
    DELETE,
    "PyTorch/XLA debug output; on TorchNeuron use TORCH_LOGS=graph_breaks,recompiles or TORCH_NEURONX_DEBUG_DIR",
)
_PARALLEL_COMPILE = EnvAction("NM501", DELETE, "read only by neuron_parallel_compile, which TorchNeuron does not use")
_BF16 = EnvAction(
    "NM502",
    DELETE_BY_HAND,
    "it has no effect on TorchNeuron; make the precision explicit in code: model.to(torch.bfloat16) (full bf16, "
    'what it did), bf16=True for the Trainer, or torch.autocast(device_type="neuron", dtype=torch.bfloat16)',
)
# Variable name -> action. A name ending in "*" is a prefix; the longest matching one wins and an
# exact name always beats a prefix.
ENV_VARS: dict[str, EnvAction] = {
    "PJRT_DEVICE": EnvAction("NM501", DELETE, "selected the PyTorch/XLA runtime; TorchNeuron does not read it"),
    "PT_XLA_DEBUG*": _XLA_DEBUG,
    "XLA_IR_DEBUG": _XLA_DEBUG,
    "XLA_HLO_DEBUG": _XLA_DEBUG,
    "XLA_SAVE_TENSORS_*": _XLA_DEBUG,
    "XLA_FLAGS": EnvAction("NM501", DELETE, "flags of the XLA compiler, which TorchNeuron does not use"),
    "XLA_IR_SHAPE_CACHE_SIZE": EnvAction(
        "NM501", DELETE, "sized the lazy-tensor IR cache, which TorchNeuron does not have"
    ),
    "NEURON_EXTRACT_GRAPHS_ONLY": _PARALLEL_COMPILE,
    "NEURON_PARALLEL_COMPILE_MAX_RETRIES": _PARALLEL_COMPILE,
    "NEURON_IGNORE_TRAINING_SCRIPT_ERROR_AND_COMPILE": _PARALLEL_COMPILE,
    "XLA_*": EnvAction(
        "NM501", BY_HAND, "a PyTorch/XLA setting TorchNeuron ignores: check what it tuned, then delete this setting"
    ),
    "XLA_USE_BF16": _BF16,
    "XLA_DOWNCAST_BF16": _BF16,
    "NEURON_COMPILE_CACHE_URL": EnvAction(
        "NM503",
        RENAME,
        "TORCH_NEURONX_NEFF_CACHE_DIR takes a local or NFS folder, not a URL",
        rename_to="TORCH_NEURONX_NEFF_CACHE_DIR",
        remote_message=(
            "TorchNeuron has no S3 compile cache: set TORCH_NEURONX_NEFF_CACHE_DIR to a local or NFS folder, "
            "then delete this setting"
        ),
    ),
    "NEURON_FRAMEWORK_DEBUG": EnvAction(
        "NM503",
        RENAME,
        "artifacts are kept under TORCH_NEURONX_DEBUG_DIR (default /tmp/neuron_backend); set it to pick the folder",
        rename_to="TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS",
    ),
    "NEURON_NUM_RECENT_MODELS_TO_KEEP": EnvAction(
        "NM503", BY_HAND, "no TorchNeuron equivalent: delete this setting and prune the NEFF cache folder yourself"
    ),
    "NEURON_CC_FLAGS": EnvAction(
        "NM504",
        KEEP,
        "dropped XLA-era {flags}; check the remaining flags apply to TorchNeuron (its cache is "
        "TORCH_NEURONX_NEFF_CACHE_DIR)",
        drop_flags=("--cache_dir=", "--retry_failed_compilation"),
    ),
    "NEURON_FUSE_SOFTMAX": EnvAction(
        "NM504", BY_HAND, "unknown to TorchNeuron: check whether it still has an effect, else delete this setting"
    ),
    "XLA_USE_32BIT_LONG": EnvAction(
        "NM505",
        BY_HAND,
        "TorchNeuron has no int64-to-int32 switch: check the int64 tensors sent to the device, "
        "then delete this setting",
    ),
}
_PREFIXES = sorted((k[:-1] for k in ENV_VARS if k.endswith("*")), key=len, reverse=True)


def classify_env_var(name: str, value: str | None = None) -> EnvAction | None:
    """What to do with a legacy variable; ``None`` for variables this tool leaves alone.

    ``value`` is the literal text assigned, when known: a flags variable matters only when it
    holds an XLA-era flag, and a remote cache URL cannot simply be renamed.
    """
    action = ENV_VARS.get(name)
    if action is None:
        prefix = next((p for p in _PREFIXES if name.startswith(p)), None)
        action = ENV_VARS[prefix + "*"] if prefix is not None else None
    if action is None:
        return None
    if action.drop_flags:
        return action if value is not None and flags_in(value, action.drop_flags) else None
    if action.remote_message and value is not None and "://" in value:
        return EnvAction(action.rule, BY_HAND, action.remote_message)
    return action


def _flag_pattern(flags: tuple[str, ...]) -> re.Pattern[str]:
    parts = [re.escape(f[:-1]) + r"(?:=|\s+)\S+" if f.endswith("=") else re.escape(f) for f in flags]
    return re.compile(r"(?<!\S)(?:" + "|".join(parts) + r")(?!\S)")


def _flag_names(flags: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"(?<!\S)(?:" + "|".join(re.escape(f.rstrip("=")) for f in flags) + r")(?![\w-])")


def flags_in(text: str, flags: tuple[str, ...]) -> list[str]:
    """The flags of ``flags`` that ``text`` holds: as written, with their values, where
    :func:`drop_flags` can remove them; else (a value still to be filled in) just their names."""
    found = [m.group(0) for m in _flag_pattern(flags).finditer(text)]
    return found or [m.group(0) for m in _flag_names(flags).finditer(text)]


def drop_flags(text: str, flags: tuple[str, ...]) -> str:
    """``text`` without ``flags``; the leading space of an appended fragment (" --x") is kept."""
    pattern = _flag_pattern(flags)
    if not pattern.search(text):
        return text
    kept = pattern.sub(" ", text).split()
    if not kept:
        return ""
    lead = " " if text[:1].isspace() else ""
    trail = " " if text[-1:].isspace() else ""
    return lead + " ".join(kept) + trail


# ----- applying the table to Python code ------------------------------------------------------


def _literal_text(node: cst.CSTNode | None) -> str | None:
    """All string-literal text inside ``node`` (what a value check can see), or None."""
    if node is None:
        return None
    finder = _StringText()
    node.visit(finder)
    return "".join(finder.parts) if finder.found else None


class _StringText(cst.CSTVisitor):
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.found = False

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if isinstance(node.evaluated_value, str):
            self.parts.append(node.evaluated_value)
            self.found = True

    def visit_FormattedStringText(self, node: cst.FormattedStringText) -> None:
        self.parts.append(node.value)
        self.found = True


class _FlagDropper(cst.CSTTransformer):
    """Drops flags from every plain string literal of a value, then folds ``x + ""`` away.
    Flags inside f-strings or next to escapes are left for a human."""

    def __init__(self, flags: tuple[str, ...]) -> None:
        super().__init__()
        self.flags = flags

    def leave_SimpleString(self, original, updated: cst.SimpleString):
        value = updated.evaluated_value
        if not isinstance(value, str) or "\\" in updated.value or not flags_in(value, self.flags):
            return updated
        quote = updated.quote
        return updated.with_changes(value=f"{updated.prefix}{quote}{drop_flags(value, self.flags)}{quote}")

    def leave_BinaryOperation(self, original, updated: cst.BinaryOperation):
        if isinstance(updated.operator, cst.Add):
            if _is_empty_string(updated.right):
                return updated.left
            if _is_empty_string(updated.left):
                return updated.right
        return updated


def _is_empty_string(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.SimpleString) and node.evaluated_value == ""


def _string_key(node: cst.CSTNode | None) -> str | None:
    if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
        return node.evaluated_value
    return None


def _renamed(key: cst.SimpleString, name: str, target: str) -> cst.SimpleString:
    return key.with_changes(value=key.value.replace(name, target, 1))


def _single_target(statement) -> cst.BaseExpression | None:
    if isinstance(statement, cst.AugAssign):
        return statement.target
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        return statement.targets[0].target
    return None


def _without(items: list, dropped: set[int]) -> list:
    """``items`` minus the dropped positions; the last survivor takes the separators of the
    original last item, so no dangling comma or lost closing-line whitespace is left."""
    kept = [item for i, item in enumerate(items) if i not in dropped]
    if kept and len(items) - 1 in dropped:
        last = items[-1]
        changes = {"comma": last.comma}
        if isinstance(last, cst.Arg):
            changes["whitespace_after_arg"] = last.whitespace_after_arg
        kept[-1] = kept[-1].with_changes(**changes)
    return kept


@dataclass(frozen=True)
class _Decision:
    """What happens to one setting: ``kind`` is DELETE, BY_HAND, RENAME or KEEP (value edited)."""

    kind: str
    message: str
    rename_to: str = ""
    value: cst.BaseExpression | None = None
    # A deletion a reviewer should know about (the marker lands on the next line).
    review: bool = False
    # A deletion that leaves work in the code (a TODO marker lands on the next line).
    todo: bool = False


_SETTERS = frozenset({"os.environ.setdefault", "os.putenv"})
# The variables whose value is edited flag by flag (NEURON_CC_FLAGS).
FLAG_VARIABLES = frozenset(name for name, action in ENV_VARS.items() if action.drop_flags)


class _Definitions(cst.CSTVisitor):
    """What a flags variable is set from: the settings of it that read a Python variable, and every
    statement that assigns a Python variable (target Name node -> its statement)."""

    def __init__(self, ctx) -> None:
        super().__init__()
        self.ctx = ctx
        self.reads: list[tuple[str, cst.BaseExpression]] = []  # (flags variable, the value that reads it)
        self.statements: dict[int, cst.BaseSmallStatement] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self.statements[id(target.target)] = node
        self._setting(_single_target(node), node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name):
            self.statements[id(node.target)] = node
        self._setting(node.target, node.value)

    def visit_Call(self, node: cst.Call) -> None:
        names = self.ctx.qualified_names(node.func)
        if names & _SETTERS and len(node.args) > 1 and node.args[0].keyword is None:
            self._named(_string_key(node.args[0].value), node.args[1].value)

    def visit_DictElement(self, node: cst.DictElement) -> None:
        self._named(_string_key(node.key), node.value)

    def _setting(self, target, value) -> None:
        if isinstance(target, cst.Subscript) and len(target.slice) == 1:
            index = target.slice[0].slice
            if isinstance(index, cst.Index) and "os.environ" in self.ctx.qualified_names(target.value):
                self._named(_string_key(index.value), value)

    def _named(self, name: str | None, value: cst.BaseExpression) -> None:
        if name in FLAG_VARIABLES:
            self.reads.append((name, value))


def _flag_definitions(ctx) -> dict[int, str]:
    """id(statement) -> flags variable, for each statement that builds the text of a Python variable a
    flags variable is then set from (``flags = "..."; flags += " --x"; os.environ["NEURON_CC_FLAGS"] = flags``),
    when every assignment of that Python variable is a string: the XLA-era flags are dropped there."""
    if not any(name.encode() in ctx.text.encode() for name in FLAG_VARIABLES):
        return {}
    found = _Definitions(ctx)
    ctx.module.visit(found)
    if not found.reads:
        return {}
    scopes = ctx.wrapper.resolve(ScopeProvider)
    out: dict[int, str] = {}
    for flags_name, value in found.reads:
        for name in name_nodes(value):
            scope = scopes.get(name)
            assignments = scope[name.value] if scope is not None else set()
            statements = [found.statements.get(id(a.node)) for a in assignments]
            if not statements or not all(_builds_text(st, name.value) for st in statements):
                continue
            out.update((id(st), flags_name) for st in statements)
    return out


def _builds_text(statement, name: str) -> bool:
    """``name = "..."`` / ``name += "..."`` / ``name = name + "..."``: string literals and the variable only."""
    if not isinstance(statement, (cst.Assign, cst.AugAssign)) or _literal_text(statement.value) is None:
        return False
    return all(node.value == name for node in name_nodes(statement.value))


FLAG_DEFINITIONS = Fact("env_flag_definitions", _flag_definitions)


class _EnvVarRule(Rule):
    """Applies the rows of :data:`ENV_VARS` that belong to ``meta.id``.

    Statements that only set variables are edited by the line hook, so a deleted setting can take
    its whole line with it and one ``update({...})`` can be shared by several rules; a setter whose
    value is used inside an expression is handled at the call.
    """

    also_edits = ("shell",)

    calls = {name: "setter_in_expression" for name in _SETTERS}

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.statement_calls: set[int] = set()
        self.reviews: list[str] = []
        self.notes: list[str] = []
        self.todos: list[str] = []

    def _decide(self, name: str, value: cst.BaseExpression | None, appends: bool = False) -> _Decision | None:
        """What this rule does to ``name = value`` (``name += value`` when ``appends``)."""
        text = _literal_text(value)
        action = classify_env_var(name, text)
        if action is None or action.rule != self.meta.id:
            return None
        if action.kind == DELETE_BY_HAND:
            return _Decision(DELETE, f"{name}: {action.message}", todo=True)
        if action.kind != KEEP:
            return _Decision(action.kind, f"{name}: {action.message}", action.rename_to)
        found = flags_in(text or "", action.drop_flags)
        edited = value.visit(_FlagDropper(action.drop_flags))
        left = flags_in(_literal_text(edited) or "", action.drop_flags)
        if left:
            return _Decision(BY_HAND, f"{name}: remove the XLA-era {', '.join(left)} by hand")
        message = action.message.format(flags=", ".join(found))
        # Nothing but XLA-era flags was added: what is left re-reads the variable or appends "".
        rereads = _literal_text(edited) == name and not isinstance(edited, cst.SimpleString)
        if rereads or (appends and _is_empty_string(edited)):
            message = f"a {name} setting that only added XLA-era {', '.join(found)}"
            return _Decision(DELETE, message, review=True)
        return _Decision(KEEP, message, value=edited)

    def _settle(self, decision: _Decision, anchor: cst.CSTNode) -> bool:
        """Record a decision made inside a statement; False when the setting is deleted.
        ``anchor`` is the original node, whose position the report and suppressions use."""
        if decision.kind == DELETE:
            pending = self.todos if decision.todo else self.reviews if decision.review else self.notes
            pending.append(f"deleted {decision.message}")
            return False
        if decision.kind == BY_HAND:
            self.ctx.manual(self.meta, anchor, decision.message)
        else:
            self.reviews.append(decision.message)
        return True

    # ----- bare statements ----------------------------------------------------------------------
    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        for small in node.body:
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                self.statement_calls.add(id(small.value))

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        self.reviews, self.notes, self.todos = [], [], []
        body = []
        # Names resolve on the original nodes; edits are made to the updated ones.
        for before, small in zip(original.body, updated.body):
            result = self._statement(before, small)
            if result is not None:
                body.append(result)
        if len(body) == len(updated.body) and all(a is b for a, b in zip(body, updated.body)):
            return updated
        said = {"review": "; ".join(self.reviews), "message": "; ".join(self.notes), "todo": "; ".join(self.todos)}
        if not body:
            return Edit(StatementReplacement([]), **said)
        body[-1] = body[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        return Edit(updated.with_changes(body=body), **said)

    def _statement(self, before: cst.BaseSmallStatement, small: cst.BaseSmallStatement):
        """The statement with this rule's settings applied; None when nothing of it remains."""
        flags_name = self.ctx.fact(FLAG_DEFINITIONS).get(id(before))
        if flags_name is not None:
            return self._definition(flags_name, before, small)
        if isinstance(small, (cst.Assign, cst.AugAssign)):
            key = self._environ_key(_single_target(before), _single_target(small))
            if key is None:
                return small
            appends = isinstance(small, cst.AugAssign)
            return self._setting(small, key, small.value, _with_value, before, appends)
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            names = self.ctx.qualified_names(before.value.func)
            call = small.value
            if names & _SETTERS and call.args and call.args[0].keyword is None:
                value = call.args[1].value if len(call.args) > 1 else None
                return self._setting(small, call.args[0].value, value, _with_setter_value, before)
            if "os.environ.update" in names:
                return self._update(before, small)
        return small

    def _definition(self, flags_name: str, before, small):
        """``flags = "..."`` / ``flags += "..."`` whose text a flags variable is set from; None when deleted."""
        decision = self._decide(flags_name, small.value, appends=isinstance(small, cst.AugAssign))
        if decision is None:
            return small
        variable = code_of(_single_target(before))
        if decision.kind == DELETE:
            statement = code_of(before).strip()
            decision = replace(decision, message=f"`{statement}`, which only added XLA-era flags to {flags_name}")
        else:
            decision = replace(decision, message=f"`{variable}`, set into {flags_name}: {decision.message}")
        if not self._settle(decision, before):
            return None
        return small.with_changes(value=decision.value) if decision.kind == KEEP else small

    # ----- a dict of variables (an environment for a launcher) ----------------------------------
    def leave_Dict(self, original: cst.Dict, updated: cst.Dict):
        """``{"NEURON_CC_FLAGS": "... --retry_failed_compilation"}`` outside ``os.environ.update``: the
        flags are dropped from the value, as for a setting (a dict cannot lose an entry safely)."""
        elements = list(updated.elements)
        reviews = []
        for position, (before, element) in enumerate(zip(original.elements, elements)):
            name = _string_key(element.key) if isinstance(element, cst.DictElement) else None
            if name not in FLAG_VARIABLES:
                continue
            decision = self._decide(name, element.value)
            if decision is None:
                continue
            if decision.kind == BY_HAND:
                self.ctx.manual(self.meta, before, decision.message)
            elif decision.kind == KEEP:
                elements[position] = element.with_changes(value=decision.value)
                reviews.append(decision.message)
        if not reviews:
            return updated
        return Edit(updated.with_changes(elements=elements), review="; ".join(reviews))

    def _environ_key(self, before, target) -> cst.SimpleString | None:
        """The literal name in ``os.environ["NAME"]``."""
        if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
            return None
        index = target.slice[0].slice
        if not isinstance(index, cst.Index) or _string_key(index.value) is None:
            return None
        return index.value if "os.environ" in self.ctx.qualified_names(before.value) else None

    def _setting(self, node, key, value, with_value, anchor, appends=False):
        """``node`` (a statement or a dict entry) setting the variable named by the literal ``key``
        to ``value``, after this rule's edit; None when it is deleted."""
        name = _string_key(key)
        decision = self._decide(name, value, appends) if name is not None else None
        if decision is None:
            return node
        if not self._settle(decision, anchor):
            return None
        if decision.kind == RENAME:
            return node.deep_replace(key, _renamed(key, name, decision.rename_to))
        if decision.kind == KEEP:
            return with_value(node, decision.value)
        return node

    def _update(self, before: cst.Expr, small: cst.Expr):
        """``os.environ.update({"A": a, ...})`` or ``update(A=a, ...)``; None when no entry is left."""
        call, args = small.value, small.value.args
        mapping = args[0].value if len(args) == 1 and args[0].keyword is None else None
        if isinstance(mapping, cst.Dict):
            entries, anchors = list(mapping.elements), list(before.value.args[0].value.elements)
            items = [
                self._setting(e, e.key, e.value, _with_value, a) if isinstance(e, cst.DictElement) else e
                for e, a in zip(entries, anchors)
            ]
        elif args and all(arg.keyword is not None and not arg.star for arg in args):
            mapping = None
            entries = list(args)
            items = [self._keyword(arg, a) for arg, a in zip(entries, before.value.args)]
        else:
            return small
        if all(a is b for a, b in zip(items, entries)):
            return small
        dropped = {i for i, item in enumerate(items) if item is None}
        kept = _without([item or entry for item, entry in zip(items, entries)], dropped)
        if not kept:
            return None
        if mapping is not None:
            kept = [args[0].with_changes(value=mapping.with_changes(elements=kept))]
        return small.with_changes(value=call.with_changes(args=kept))

    def _keyword(self, arg: cst.Arg, anchor: cst.Arg):
        """``update(NAME=value)``: the argument after this rule's edit; None when deleted."""
        decision = self._decide(arg.keyword.value, arg.value)
        if decision is None:
            return arg
        if not self._settle(decision, anchor):
            return None
        if decision.kind == RENAME:
            return arg.with_changes(keyword=cst.Name(decision.rename_to))
        if decision.kind == KEEP:
            return arg.with_changes(value=decision.value)
        return arg

    # ----- setters inside expressions -----------------------------------------------------------
    def setter_in_expression(self, original: cst.Call, updated: cst.Call, qname: str):
        """``x = os.environ.setdefault("X", v)``: renames and flag edits still apply in place; a
        deletion cannot, because the value is used."""
        if id(original) in self.statement_calls:
            return updated
        args = updated.args
        name = _string_key(args[0].value) if args and args[0].keyword is None else None
        value = args[1].value if len(args) > 1 else None
        decision = self._decide(name, value) if name is not None else None
        if decision is None:
            return updated
        if decision.kind in (DELETE, BY_HAND):
            message = decision.message
            if decision.kind == DELETE:
                message += "; this call's value is used, so remove the setting by hand"
            self.ctx.manual(self.meta, original, message)
            return updated
        if decision.kind == RENAME:
            renamed = updated.deep_replace(args[0].value, _renamed(args[0].value, name, decision.rename_to))
            return Edit(renamed, review=decision.message)
        return Edit(_with_setter_value(updated, decision.value), review=decision.message)


def _with_value(node, value):
    return node.with_changes(value=value)


def _with_setter_value(node, value):
    """``node`` (a setter call, or the statement that is one) with its second argument replaced."""
    call = node.value if isinstance(node, cst.Expr) else node
    args = [call.args[0], call.args[1].with_changes(value=value), *call.args[2:]]
    new_call = call.with_changes(args=args)
    return node.with_changes(value=new_call) if isinstance(node, cst.Expr) else new_call


def _triggers(rule_id: str) -> tuple[bytes, ...]:
    """The variable names (or prefixes) of a rule's rows: files without any are never parsed."""
    return tuple(sorted({name.rstrip("*").encode() for name, a in ENV_VARS.items() if a.rule == rule_id}))
