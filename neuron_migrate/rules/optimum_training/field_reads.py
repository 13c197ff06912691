"""Reads of the fields that optimum-neuron's arguments classes had and the stock classes lack.

After the migration ``training_args`` is a stock ``TrainingArguments`` (or ``SFTConfig``): a read of
``training_args.tensor_parallel_size`` that survives it is an AttributeError at start-up. Each such read
is planned here, once per file, from the original tree:

- a field the stock class has under another name (``max_seq_length`` of SFTConfig) is read by that name;
- a Neuron-only field of arguments parsed next to the script's own dataclass
  (``HfArgumentParser((ScriptArguments, NeuronTrainingArguments))``) moves into that dataclass, which keeps
  its command-line flag working, and the read goes to the variable that holds it (``script_args``);
- a Neuron-only field of arguments built in the file is the value they were built with;
- anything else gets a TODO, never a rewrite that still reads the missing field.

Which fields move is decided from the text by :func:`~neuron_migrate.rules.hf_fields.fields_taken_over`,
which the launch-script rules ask too, so a launch line keeps exactly the flags the script still parses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from neuron_migrate.migrate.context import code_of, root_name
from neuron_migrate.rules import hf_fields as hf
from neuron_migrate.rules.calls import UNKNOWN, literal

# The attribute names worth a look: every field some legacy arguments class had and a stock one may lack.
FIELD_READS = frozenset({*hf.NEURON_ONLY_FIELDS, *hf.SFT_RENAMED, *hf.VERSIONED_FIELDS, "trn_config"})
# What to read instead of a field transformers 5 removed from TrainingArguments.
REMOVED_FIELD_STEPS = {
    "overwrite_output_dir": "transformers 5 always writes into output_dir: read it as True",
    "warmup_ratio": "TrainingArguments takes the ratio as warmup_steps (below 1 it is a ratio): read that",
    "logging_dir": 'TensorBoard reads os.environ["TENSORBOARD_LOGGING_DIR"] instead: read that',
}


@dataclass
class FieldRead:
    """What a read becomes: ``code`` (with ``note`` for the report), or nothing and the ``todo``."""

    code: str = ""
    note: str = ""
    todo: str = ""


@dataclass
class FieldPlan:
    # id(original ``x.field`` Attribute) -> what becomes of it
    reads: dict[int, FieldRead] = field(default_factory=dict)
    # id(original ``x.trn_config`` Attribute) -> the variable of the script's own dataclass at that place
    receivers: dict[int, str] = field(default_factory=dict)
    # id(original ``x.trn_config`` Attribute) of arguments built in the file -> (the call, DistributedConfig
    # sizes as code, whether it asked for ZeRO-1)
    built: dict[int, tuple[cst.Call, dict[str, str], bool]] = field(default_factory=dict)
    # the module-level dataclass that takes Neuron-only fields over, and those fields
    own_class: str = ""
    added: tuple[str, ...] = ()
    # those of ``added`` it does not declare yet
    missing: tuple[str, ...] = ()
    # the stock class the legacy arguments became ("TrainingArguments")
    stock: str = ""


@dataclass(frozen=True)
class _Binding:
    """What a variable at one place holds: legacy arguments from ``parses`` (one, or one per branch of an
    ``if``) or built by ``call``."""

    parses: frozenset = frozenset()
    call: cst.Call | None = None
    # the function parameter the parse reached the read through: (function, parameter)
    via: tuple[cst.FunctionDef, cst.Param] | None = None


_OTHER = _Binding()  # something else than legacy arguments


def plan_fields(scanner, argument_classes) -> FieldPlan:
    """The plan for every read of the file (``scanner`` is the optimum_training scanner, its facts gathered;
    ``argument_classes`` the qualified names of the legacy arguments classes)."""
    facts = scanner.facts
    plan = FieldPlan()
    if not facts.args_names or not scanner.seen.field_reads:
        return plan
    taken = hf.fields_taken_over(scanner.ctx.text)
    module_classes = {id(node) for node in scanner.ctx.module.body}
    if taken is not None and any(
        c.name.value == taken.own_class and id(c) in module_classes for c in scanner.seen.classes
    ):
        plan.own_class, plan.added, plan.missing = taken.own_class, taken.fields, taken.missing
        targets = [facts.args_targets[var] for var in sorted(taken.neuron_vars) if var in facts.args_targets]
        plan.stock = targets[0].name if targets else "the stock arguments class"
    bindings = _Bindings(scanner, taken.own_var if taken else "", argument_classes)
    for attr in scanner.seen.field_reads:
        var, name = attr.value.value, attr.attr.value
        if var not in facts.args_names:
            continue
        binding = bindings.of(attr.value)
        if binding is _OTHER:
            continue
        target = facts.args_targets.get(var)
        if name == "trn_config":
            receiver = bindings.own_receiver(attr, binding) if plan.own_class else ""
            if receiver:
                plan.receivers[id(attr)] = receiver
            elif binding is not None and binding.call is not None:
                built = _built_sizes(binding.call, attr, bindings)
                if built is not None:
                    plan.built[id(attr)] = (binding.call, *built)
            continue
        read = _plan_read(attr, name, binding, target, plan, bindings, store=id(attr) in scanner.seen.stores)
        if read is not None:
            plan.reads[id(attr)] = read
    for attr in scanner.seen.trn_config_reads:
        # ``training_args.trn_config.tensor_parallel_size``: the size the script's own dataclass now holds
        receiver = plan.receivers.get(id(attr.value))
        if receiver and attr.attr.value in hf.TRN_CONFIG_FIELDS and id(attr) not in scanner.seen.stores:
            code = f"{receiver}.{attr.attr.value}"
            note = f"`{code_of(attr)}` read from `{code}`: {plan.own_class} takes it over"
            plan.reads[id(attr)] = FieldRead(code, note)
            facts.skip_nodes.add(id(attr.value))
    return plan


def _plan_read(attr, name, binding, target, plan: FieldPlan, bindings, store: bool) -> FieldRead | None:
    var = attr.value.value
    stock = target.name if target is not None else "the stock arguments class"
    if target is not None and target.sft and name in hf.SFT_RENAMED:
        new = hf.SFT_RENAMED[name]
        return FieldRead(f"{var}.{new}", f"`{var}.{name}` read as `{var}.{new}`: SFTConfig's name for it")
    if name in hf.NEURON_FIELD_DECLARATIONS:
        if binding is not None and binding.parses:
            receiver = bindings.own_receiver(attr, binding) if name in plan.added else ""
            if receiver:
                note = f"`{var}.{name}` read from `{receiver}.{name}`: {plan.own_class} takes the field over"
                return FieldRead(f"{receiver}.{name}", note)
        if binding is not None and binding.call is not None and not store:
            value = _built_with(binding.call, name, attr, bindings)
            if value:
                return FieldRead(value, f"`{var}.{name}` is {value}, the value {var} was built with")
        if store:
            return None  # setting an attribute the class lacks still works
        if name in plan.added:
            step = f"{plan.own_class} takes it over: pass {bindings.own_var} here and read `{bindings.own_var}.{name}`"
        else:
            step = "read the value from your own settings (a dataclass parsed next to it, or the launch command)"
        return FieldRead(todo=f"`{var}.{name}`: {stock} has no `{name}`; {step}")
    if name in REMOVED_FIELD_STEPS and target is not None and not store and not _has_field(target.owner, name):
        return FieldRead(todo=f"`{var}.{name}`: {stock} has no `{name}` in {hf.version_text('transformers')}; "
                         f"{REMOVED_FIELD_STEPS[name]}")
    return None


def _has_field(owner: str, name: str) -> bool:
    """Whether the target release of ``owner`` has the field: its source when installed, else the table."""
    real = hf.installed_fields(owner) if owner in hf.CLASS_SOURCES else None
    if real is not None:
        return name in real
    table = hf.table_says("TrainingArguments", name)
    return True if table is None else table


def _built_with(call: cst.Call, name: str, attr: cst.Attribute, bindings) -> str:
    """The code of the value legacy arguments were built with for ``name``, if it reads the same here:
    a literal (the legacy default when not passed), or a variable that means the same at ``attr``."""
    if any(arg.star for arg in call.args):
        return ""
    arg = next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)
    if arg is None:
        return hf.NEURON_FIELD_DECLARATIONS[name][1]
    value = literal(arg.value)
    if value is not UNKNOWN and not isinstance(value, (dict, list, set)):
        return repr(value) if not isinstance(value, str) else code_of(arg.value).strip()
    root = root_name(arg.value)
    if root and bindings.same_meaning(root, arg.value, attr):
        return code_of(arg.value).strip()
    return ""


def _built_sizes(call: cst.Call, attr: cst.Attribute, bindings) -> tuple[dict[str, str], bool] | None:
    """The DistributedConfig sizes of arguments built by ``call``, as code that reads the same at ``attr``."""
    sizes = {}
    for name, size in hf.PARALLEL_FIELDS.items():
        value = _built_with(call, name, attr, bindings)
        if not value:
            return None
        if value != "1":
            sizes[size] = value
    zero_1 = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "zero_1"), None)
    return sizes, zero_1 is not None and literal(zero_1) is True


class _Bindings:
    def __init__(self, scanner, own_var: str, argument_classes) -> None:
        self.scanner = scanner
        self.argument_classes = argument_classes
        self.facts = scanner.facts
        self.own_var = own_var
        self.calls_by_name: dict[str, list[cst.Call]] = {}
        for call in scanner.seen.calls:
            if isinstance(call.func, cst.Name):
                self.calls_by_name.setdefault(call.func.value, []).append(call)

    def referents(self, name: cst.Name) -> set:
        scope = self.scanner.scopes.get(name)
        if scope is None:
            return set()
        for access in scope.accesses[name.value]:
            if access.node is name:
                return set(access.referents)
        return set()

    def of(self, name: cst.Name, depth: int = 0) -> _Binding | None:
        """What ``name`` holds at its place (None: not known)."""
        referents = self.referents(name)
        parses = [self.facts.parse_names.get(id(referent.node)) for referent in referents]
        if parses and all(parses):
            # ``a, b = parser.parse_json_file(...)`` / ``a, b = parser.parse_args_into_dataclasses()`` in two branches
            legacy = {parse.names[name.value][1] is not None for parse in parses}
            if legacy == {True}:
                return _Binding(parses=frozenset(parses))
            return _OTHER if legacy == {False} else None
        if len(referents) != 1:
            return None
        node = next(iter(referents)).node
        found = self.scanner.seen.assigns.get(id(node))
        if found is not None:
            value = found[0].value
            legacy = isinstance(value, cst.Call) and self.scanner.qname(value.func, self.argument_classes)
            return _Binding(call=value) if legacy else _OTHER
        if isinstance(node, cst.Param) and depth == 0:
            return self._through_parameter(node)
        return None if isinstance(node, cst.Param) else _OTHER

    def _through_parameter(self, param: cst.Param) -> _Binding | None:
        function = self.scanner.seen.functions.get(id(param))
        values = self._passed(function, param) if function is not None else None
        if not values:
            return None
        found = {self.of(value, depth=1) if isinstance(value, cst.Name) else None for value in values}
        if len(found) != 1:
            return None
        (binding,) = found
        if binding is None or binding is _OTHER:
            return binding
        return _Binding(parses=binding.parses, call=binding.call, via=(function, param))

    def _passed(self, function: cst.FunctionDef, param: cst.Param) -> list[cst.BaseExpression] | None:
        """The value every call of ``function`` in the file passes for ``param`` (None: one cannot be read)."""
        params = [*function.params.posonly_params, *function.params.params]
        calls = self.calls_by_name.get(function.name.value, [])
        values = []
        for call in calls:
            value = None
            for position, arg in enumerate(call.args):
                if arg.star:
                    return None
                if arg.keyword is None and position < len(params) and params[position] is param:
                    value = arg.value
                elif arg.keyword is not None and arg.keyword.value == param.name.value:
                    value = arg.value
            if value is None:
                return None
            values.append(value)
        return values

    def own_receiver(self, attr: cst.Attribute, binding: _Binding | None) -> str:
        """The variable holding the script's own dataclass of ``binding``'s parse, as seen from ``attr``."""
        if binding is None or not binding.parses or any(self.own_var not in p.names for p in binding.parses):
            return ""
        own_nodes = {parse.names[self.own_var][0] for parse in binding.parses}
        if binding.via is not None:
            function, _ = binding.via
            for param in [*function.params.posonly_params, *function.params.params, *function.params.kwonly_params]:
                values = self._passed(function, param)
                if values and all(self._is_node(value, own_nodes) for value in values):
                    return param.name.value
        scope = self.scanner.scopes.get(attr.value)
        if scope is not None and {a.node for a in scope[self.own_var]} == own_nodes:
            return self.own_var
        return ""

    def _is_node(self, value: cst.BaseExpression, nodes: set[cst.Name]) -> bool:
        """Whether the variable ``value`` is bound by (every one of) the assignments of ``nodes``."""
        if not isinstance(value, cst.Name):
            return False
        return {referent.node for referent in self.referents(value)} == nodes

    def same_meaning(self, root: str, value: cst.BaseExpression, attr: cst.Attribute) -> bool:
        """Whether the variable ``root`` of ``value`` is the same binding at ``attr`` as where ``value`` is."""
        names = [n for n in _names(value) if n.value == root]
        if not names:
            return False
        here, there = self.scanner.scopes.get(names[0]), self.scanner.scopes.get(attr.value)
        if here is None or there is None:
            return False
        mine = {a.node for a in here[root]}
        return len(mine) == 1 and {a.node for a in there[root]} == mine


def _names(node: cst.CSTNode):
    if isinstance(node, cst.Name):
        yield node
    for child in node.children:
        yield from _names(child)
