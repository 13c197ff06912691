"""What the optimum_training rules share: helpers, constants and base classes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import ClassVar

import libcst as cst
from libcst.metadata import ScopeProvider

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules import hf_fields as hf
from neuron_migrate.rules.base import REVIEW, Edit, Fact, Rule
from neuron_migrate.rules.calls import UNKNOWN, bind_args, keyword_arg, literal, new_keyword, with_elements
from neuron_migrate.rules.optimum_names import optimum_names, with_methods
from neuron_migrate.rules.optimum_training.field_reads import FIELD_READS, FieldPlan, plan_fields
from neuron_migrate.rules.tables.optimum_training import MODEL_CLASSES, TRAINING_MODELS_PACKAGE
from neuron_migrate.rules.xla_step.common import source_text, with_args

NEURON_DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest"
DOCS_HF = f"{NEURON_DOCS}/torch/reference/torchneuron-resources.html"
DOCS_FINE_TUNING = f"{NEURON_DOCS}/torch/tutorials/tutorial-hf-fine-tuning.html"
DOCS_COMPILE = f"{NEURON_DOCS}/torch/compile/reference-torch-compile.html"
DOCS_DISTRIBUTED = f"{NEURON_DOCS}/torch/guides/torch-distributed.html"
DOCS_TRAINING_ARGS = "https://huggingface.co/docs/transformers/main_classes/trainer#transformers.TrainingArguments"
DOCS_SFT = "https://huggingface.co/docs/trl/sft_trainer"
DOCS_ORPO = "https://huggingface.co/docs/trl/orpo_trainer"
DOCS_ACCELERATE = "https://huggingface.co/docs/accelerate/package_reference/accelerator"
DOCS_PEFT = "https://huggingface.co/docs/peft/package_reference/peft_model"
DOCS_DISTRIBUTED_CONFIG = "https://huggingface.co/docs/transformers/main/en/perf_infer_gpu_multi"
TRIGGERS = (b"optimum",)
# The start-up settings of NM217 and why each is there.
DYNAMIC_SHAPES_WHY = (
    "the neuron compile backend wants static shapes: recompile per shape instead of tracing dynamic dims"
)
ASYNC_LOAD_WHY = "transformers' threaded weight loading can hang on the neuron device"
STARTUP = (
    f"# {DYNAMIC_SHAPES_WHY}\n"
    "torch._dynamo.config.automatic_dynamic_shapes = False\n"
    f"# {ASYNC_LOAD_WHY}\n"
    'os.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1")\n\n'
)


# ----- the legacy classes and where they go ----------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A stock replacement: ``from module import name``; ``owner`` keys its fields in hf_fields."""

    module: str
    name: str
    owner: str = ""
    sft: bool = False
    # The legacy positional parameters, when known: positionals past ``keep`` become keywords.
    legacy_params: tuple[str, ...] = ()
    keep: int = 0


NEURON_TRAINER_PARAMS = (
    "model", "args", "data_collator", "train_dataset", "eval_dataset", "processing_class", "callbacks",
    "optimizers", "optimizer_cls_and_kwargs", "tokenizer",
)  # fmt: skip
NEURON_SFT_TRAINER_PARAMS = (
    "model", "args", "data_collator", "train_dataset", "eval_dataset", "processing_class", "compute_loss_func",
    "compute_metrics", "callbacks", "optimizers", "optimizer_cls_and_kwargs", "preprocess_logits_for_metrics",
    "peft_config", "formatting_func",
)  # fmt: skip
TRAINERS = {
    **dict.fromkeys(
        optimum_names("NeuronTrainer", "trainers", "trainers.transformers", "trainers.trainers"),
        Target("transformers", "Trainer", legacy_params=NEURON_TRAINER_PARAMS, keep=6),
    ),
    **dict.fromkeys(
        optimum_names("Seq2SeqNeuronTrainer", "trainers", "trainers.trainers"),
        Target("transformers", "Seq2SeqTrainer", keep=6),
    ),
}
SFT_TRAINERS = dict.fromkeys(
    optimum_names("NeuronSFTTrainer", "trainers", "trainers.sft_trainer", "trainers.trainers"),
    Target("trl", "SFTTrainer", legacy_params=NEURON_SFT_TRAINER_PARAMS, keep=12),
)
ARGUMENTS = {
    **dict.fromkeys(
        optimum_names("NeuronTrainingArguments", "trainers", "trainers.training_args", "training_args"),
        Target(
            "transformers", "TrainingArguments", "TrainingArguments", legacy_params=hf.NEURON_ARGUMENT_ORDER, keep=1
        ),
    ),
    **dict.fromkeys(
        optimum_names("Seq2SeqNeuronTrainingArguments", "training_args"),
        Target("transformers", "Seq2SeqTrainingArguments", "Seq2SeqTrainingArguments", keep=1),
    ),
}
SFT_CONFIGS = dict.fromkeys(
    optimum_names("NeuronSFTConfig", "trainers", "trainers.sft_config", "trainers.trl_utils", "utils.trl_utils"),
    Target("trl", "SFTConfig", "SFTConfig", sft=True, keep=1),
)
ORPO_TRAINERS = dict.fromkeys(
    optimum_names("NeuronORPOTrainer", "trainers", "trainers.trainers", "trainers.orpo_trainer"),
    Target("trl", "ORPOTrainer", keep=6),
)
ORPO_CONFIGS = dict.fromkeys(
    optimum_names("NeuronORPOConfig", "trainers", "trainers.trl_utils", "utils.trl_utils"),
    Target("trl", "ORPOConfig", "ORPOConfig", keep=1),
)
PARSERS = dict.fromkeys(
    optimum_names("NeuronHfArgumentParser", "hf_argparser"), Target("transformers", "HfArgumentParser")
)
ACCELERATE = {
    **dict.fromkeys(
        optimum_names("NeuronAccelerator", "accelerate", "accelerate.accelerator"), Target("accelerate", "Accelerator")
    ),
    **dict.fromkeys(
        optimum_names("NeuronAcceleratorState", "accelerate", "accelerate.state"),
        Target("accelerate.state", "AcceleratorState"),
    ),
    **dict.fromkeys(
        optimum_names("NeuronPartialState", "accelerate", "accelerate.state"), Target("accelerate", "PartialState")
    ),
}
PEFT = {
    **dict.fromkeys(
        optimum_names("get_peft_model", "peft", "peft.mapping_func", "utils", "utils.peft_utils", top_level=False),
        Target("peft", "get_peft_model"),
    ),
    **dict.fromkeys(
        optimum_names("NeuronPeftModel", "peft", "peft.peft_model", top_level=False), Target("peft", "PeftModel")
    ),
    **dict.fromkeys(
        optimum_names("NeuronPeftModelForCausalLM", "peft", "peft.peft_model", top_level=False),
        Target("peft", "PeftModelForCausalLM"),
    ),
}
# Every class whose construction makes a file a Trainer-based training script.
ARGUMENT_CLASSES = {**ARGUMENTS, **SFT_CONFIGS, **ORPO_CONFIGS}
TRAINING_BUILDERS = frozenset({*TRAINERS, *SFT_TRAINERS, *ORPO_TRAINERS, *ARGUMENT_CLASSES})
PARSER_NAMES = hf.PARSER_NAMES
PARSE_METHODS = hf.PARSE_METHODS
FROM_PRETRAINED = {f"{qname}.from_pretrained": stock for qname, stock in MODEL_CLASSES.items()}
TRN_CONFIG = frozenset(
    optimum_names("TrainingNeuronConfig", TRAINING_MODELS_PACKAGE, "models.training.config", top_level=False)
)


# ----- reading the file once: what later rewrites need to know about earlier lines -------------------


@dataclass
class TrnSizes:
    """What a ``trn_config`` argument says about model parallelism, as code for DistributedConfig."""

    sizes: dict[str, str] = field(default_factory=dict)
    # TrainingNeuronConfig fields set to something other than their default that have no counterpart
    dropped: list[str] = field(default_factory=list)
    # the arguments asked for ZeRO-1 (zero_1=True): FSDP over the data-parallel ranks
    zero_1: bool = False


@dataclass
class Spread:
    """A ``**name`` argument of a legacy arguments class."""

    # the dict's entries (key -> original value) when it is a literal assigned in the file
    entries: dict[str, cst.BaseExpression] | None
    editable: bool = False
    # ``args.to_dict()`` of a legacy arguments variable (``args``), directly or through a variable: after the
    # migration it holds the fields of the stock class only
    arguments: str = ""


@dataclass
class ScriptFacts:
    # variable -> the legacy arguments call it was assigned from (None: from an argument parser)
    args_names: dict[str, cst.Call | None] = field(default_factory=dict)
    # id(training from_pretrained call) -> what its trn_config says (None: cannot be read)
    trn: dict[int, TrnSizes | None] = field(default_factory=dict)
    # lines that only built a trn_config now folded into DistributedConfig
    deletable_lines: set[int] = field(default_factory=set)
    # nodes that disappear with a rewrite and need no marker of their own
    skip_nodes: set[int] = field(default_factory=set)
    # legacy arguments calls whose parallel sizes a from_pretrained in this file took over
    consumed_args: set[int] = field(default_factory=set)
    # id(dict literal) -> the arguments Target whose fields it holds (it is only ever spread into one)
    dict_edits: dict[int, Target] = field(default_factory=dict)
    # id(Name after **) -> what is known about the dict
    spreads: dict[int, Spread] = field(default_factory=dict)
    # ids of the classes listed in an argument parser's dataclass tuple
    parser_elements: set[int] = field(default_factory=set)
    # ids of class bases in ``class X(Base):``
    class_bases: set[int] = field(default_factory=set)
    # variable -> the legacy arguments class it holds (constructed or parsed)
    args_targets: dict[str, Target] = field(default_factory=dict)
    # id(a variable a parse binds, its Name node in ``a, b = parser.parse_...()``) -> the parse
    parse_names: dict[int, Parse] = field(default_factory=dict)
    # what becomes of the fields of the legacy arguments that the stock classes do not have
    fields: FieldPlan = field(default_factory=lambda: FieldPlan())
    # ids of the nodes in the arguments of lazy_load_for_parallelism(...) calls (NM214 rewrites them)
    lazy_args: set[int] = field(default_factory=set)


@dataclass(eq=False)
class Parse:
    """``a, b = parser.parse_...()`` of a parser built from legacy arguments classes."""

    # variable -> its Name node in the assignment and the legacy class it holds (None: another dataclass)
    names: dict[str, tuple[cst.Name, Target | None]] = field(default_factory=dict)


class _Collector(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[cst.Call] = []
        self.assigns: dict[int, tuple[cst.Assign, cst.SimpleStatementLine]] = {}
        self.top_lines: set[int] = set()
        self.lines: list[cst.SimpleStatementLine] = []
        self.bases: list[cst.Arg] = []
        # ``x.field`` reads of a field some legacy arguments class had and the stock one lacks
        self.field_reads: list[cst.Attribute] = []
        # ``x.trn_config.tensor_parallel_size``
        self.trn_config_reads: list[cst.Attribute] = []
        # ids of the attributes assigned to (``x.field = 1``)
        self.stores: set[int] = set()
        # id(Param) -> its function
        self.functions: dict[int, cst.FunctionDef] = {}
        self.classes: list[cst.ClassDef] = []

    def visit_Module(self, node: cst.Module) -> None:
        self.top_lines.update(id(s) for s in node.body)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if isinstance(node.body, cst.IndentedBlock):
            self.top_lines.update(id(s) for s in node.body.body)
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            self.functions[id(param)] = node

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name) and node.attr.value in FIELD_READS:
            self.field_reads.append(node)
        elif isinstance(node.value, cst.Attribute) and node.value.attr.value == "trn_config":
            self.trn_config_reads.append(node)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.stores.add(id(node.target))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.stores.add(id(node.target))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.stores.add(id(node.target))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.bases.extend(node.bases)
        self.classes.append(node)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.lines.append(node)
        if len(node.body) == 1 and isinstance(node.body[0], cst.Assign):
            assign = node.body[0]
            if len(assign.targets) == 1:
                self.assigns[id(assign.targets[0].target)] = (assign, node)

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)


def _scan_script(ctx) -> ScriptFacts:
    # None for files that never mention optimum: the hooks of this module also see every torch_xla file.
    return _Scanner(ctx).scan() if "optimum" in source_text(ctx) else ScriptFacts()


SCRIPT_FACTS = Fact("optimum_training", _scan_script)
# (owner, field) pairs whose version-table disagreement with the installed release was reported
REPORTED_DISAGREEMENTS: Fact[set[tuple[str, str]]] = Fact("optimum_training_disagreements", lambda ctx: set())


def script_facts(ctx) -> ScriptFacts:
    """The cross-statement facts of this file, gathered once from the original tree."""
    return ctx.fact(SCRIPT_FACTS)


class _Scanner:
    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.facts = ScriptFacts()
        self.seen = _Collector()
        self._scopes = None
        self.spread_nodes: list[tuple[cst.BaseExpression, Spread]] = []

    @property
    def scopes(self):
        if self._scopes is None:
            self._scopes = self.ctx.wrapper.resolve(ScopeProvider)
        return self._scopes

    def qname(self, node: cst.CSTNode, table) -> str | None:
        return self.ctx.any_qualified_name(node, table)

    def scan(self) -> ScriptFacts:
        self.ctx.module.visit(self.seen)
        self.facts.class_bases = {id(base.value) for base in self.seen.bases}
        parsers: dict[int, list[Target | None]] = {}
        for call in self.seen.calls:
            func = call.func
            if self.qname(func, ARGUMENT_CLASSES):
                self._note_spreads(call, ARGUMENT_CLASSES[self.qname(func, ARGUMENT_CLASSES)])
            if _callee_name(func) in PARSER_NAMES and call.args:
                first = call.args[0].value
                elements = [e.value for e in first.elements] if isinstance(first, (cst.Tuple, cst.List)) else [first]
                self.facts.parser_elements.update(id(e) for e in elements)
                parsers[id(call)] = [ARGUMENT_CLASSES.get(self.qname(e, ARGUMENT_CLASSES) or "") for e in elements]
        for line in self.seen.lines:
            self._note_assignment(line, parsers)
        for node, spread in self.spread_nodes:
            spread.arguments = self._dict_of_arguments(node)
        for call in self.seen.calls:
            if self.qname(call.func, LAZY_LOAD):
                self.facts.lazy_args.update(id(n) for arg in call.args for n in _nodes(arg))
        self.facts.fields = plan_fields(self, ARGUMENT_CLASSES)
        for call in self.seen.calls:
            if self.qname(call.func, FROM_PRETRAINED):
                self._note_from_pretrained(call)
            elif self.qname(call.func, ACCELERATE):
                # NeuronAccelerator(trn_config=args.trn_config): the argument goes with its own TODO
                for arg in call.args:
                    if arg.keyword is not None and arg.keyword.value in ACCELERATOR_ONLY:
                        self.facts.skip_nodes.update(id(n) for n in _nodes(arg.value))
        return self.facts

    # ----- variables holding Neuron training arguments ------------------------------------------
    def _note_assignment(self, line: cst.SimpleStatementLine, parsers) -> None:
        if len(line.body) != 1 or not isinstance(line.body[0], cst.Assign):
            return
        assign = line.body[0]
        value = assign.value
        if not isinstance(value, cst.Call) or len(assign.targets) != 1:
            return
        target = assign.targets[0].target
        if isinstance(target, cst.Name) and self.qname(value.func, ARGUMENT_CLASSES):
            self.facts.args_names[target.value] = value
            self.facts.args_targets[target.value] = ARGUMENT_CLASSES[self.qname(value.func, ARGUMENT_CLASSES)]
            return
        # ``a, training_args = parser.parse_args_into_dataclasses()`` with a parser built from Neuron classes
        if not isinstance(target, (cst.Tuple, cst.List)) or _callee_name(value.func) not in PARSE_METHODS:
            return
        parser = value.func.value if isinstance(value.func, cst.Attribute) else None
        classes = self._parser_classes(parser, parsers)
        elements = list(target.elements)
        if classes is not None and len(elements) == len(classes) + 1 and _returns_remaining(value):
            elements = elements[:-1]
        if classes is None or len(classes) != len(elements) or not any(classes):
            return
        parse = Parse()
        for element, legacy in zip(elements, classes):
            if not isinstance(element.value, cst.Name):
                continue
            name = element.value.value
            parse.names[name] = (element.value, legacy)
            self.facts.parse_names[id(element.value)] = parse
            if legacy is not None:
                self.facts.args_names[name] = None
                self.facts.args_targets[name] = legacy

    def _parser_classes(self, parser, parsers) -> list[Target | None] | None:
        """The legacy arguments class of each dataclass the parser parses (None for another dataclass)."""
        if isinstance(parser, cst.Call):
            return parsers.get(id(parser))
        if not isinstance(parser, cst.Name):
            return None
        assign = self._single_assignment(parser)
        if assign is None or not isinstance(assign[0].value, cst.Call):
            return None
        return parsers.get(id(assign[0].value))

    def _single_assignment(self, name: cst.Name):
        """``(Assign, its line, the scope's Assignment)`` for the one binding ``name`` refers to, if any."""
        scope = self.scopes.get(name)
        if scope is None:
            return None
        referents = set()
        for access in scope.accesses[name.value]:
            if access.node is name:
                referents = access.referents
        if len(referents) != 1:
            return None
        (assignment,) = referents
        if len(assignment.scope.assignments[name.value]) != 1:
            return None
        found = self.seen.assigns.get(id(assignment.node))
        if found is None:
            return None
        return found[0], found[1], assignment

    # ----- ``**kwargs`` of arguments classes ----------------------------------------------------
    def _note_spreads(self, call: cst.Call, target: Target) -> None:
        for arg in call.args:
            if arg.star != "**":
                continue
            spread = Spread(entries=None)
            self.facts.spreads[id(arg.value)] = spread
            self.spread_nodes.append((arg.value, spread))
            if not isinstance(arg.value, cst.Name):
                continue
            found = self._single_assignment(arg.value)
            if found is None:
                continue
            assign, line, assignment = found
            spread.entries = literal_entries(assign.value)
            if spread.entries is None:
                continue
            # Edited in place only when this call is the dict's one use and its line is easy to see.
            if len(assignment.references) == 1 and id(line) in self.seen.top_lines:
                spread.editable = True
                self.facts.dict_edits[id(assign.value)] = target

    def _dict_of_arguments(self, node: cst.BaseExpression, depth: int = 0) -> str:
        """``args`` when ``node`` is ``args.to_dict()`` (or a variable assigned from it once) and ``args``
        holds legacy training arguments."""
        if isinstance(node, cst.Name) and depth == 0:
            found = self._single_assignment(node)
            return self._dict_of_arguments(found[0].value, depth + 1) if found else ""
        if not (isinstance(node, cst.Call) and not node.args and isinstance(node.func, cst.Attribute)):
            return ""
        receiver = node.func.value
        if node.func.attr.value != "to_dict" or not isinstance(receiver, cst.Name):
            return ""
        return receiver.value if receiver.value in self.facts.args_names else ""

    # ----- trn_config of training from_pretrained ----------------------------------------------
    def _note_from_pretrained(self, call: cst.Call) -> None:
        arg = _trn_config_arg(call)
        if arg is None:
            self.facts.trn[id(call)] = TrnSizes()
            return
        self.facts.skip_nodes.add(id(arg.value))
        self.facts.trn[id(call)] = self._resolve(arg.value, inline=True)

    def _resolve(self, expr: cst.BaseExpression, inline: bool) -> TrnSizes | None:
        if isinstance(expr, cst.Call) and self.qname(expr.func, TRN_CONFIG):
            return trn_config_sizes(expr, literal_only=not inline)
        if isinstance(expr, cst.Attribute) and expr.attr.value == "trn_config":
            receiver = self.facts.fields.receivers.get(id(expr))
            if receiver:
                # the sizes the parsed arguments held: the script's own dataclass takes them over
                return TrnSizes(sizes={size: f"{receiver}.{name}" for name, size in hf.PARALLEL_FIELDS.items()})
            built = self.facts.fields.built.get(id(expr))
            if built is not None:
                call, sizes, zero_1 = built
                self.facts.consumed_args.add(id(call))
                return TrnSizes(sizes=sizes, zero_1=zero_1)
            return self._sizes_of_arguments(expr.value)
        if not isinstance(expr, cst.Name):
            return None
        found = self._single_assignment(expr)
        if found is None:
            return None
        assign, line, assignment = found
        sizes = self._resolve(assign.value, inline=False)
        # ``x = args.trn_config`` only named what the call read; a TrainingNeuronConfig(...) goes only
        # when its sizes were read, so the TODO at the call never loses them.
        alias = isinstance(assign.value, cst.Attribute)
        if (sizes is not None or alias) and len(assignment.references) == 1 and id(line) in self.seen.top_lines:
            self.facts.deletable_lines.add(id(line))
            self.facts.skip_nodes.update(id(n) for n in _nodes(assign.value))
        return sizes

    def _sizes_of_arguments(self, expr: cst.BaseExpression) -> TrnSizes | None:
        if not isinstance(expr, cst.Name):
            return None
        call = self.facts.args_names.get(expr.value)
        if call is None:
            return None
        sizes = TrnSizes()
        for arg in call.args:
            name = arg.keyword.value if arg.keyword else None
            if arg.star:
                return None
            if name in hf.PARALLEL_FIELDS:
                value = literal(arg.value)
                if not isinstance(value, int):
                    return None
                if value > 1:
                    sizes.sizes[hf.PARALLEL_FIELDS[name]] = code_of(arg.value)
            elif name == "zero_1":
                sizes.zero_1 = literal(arg.value) is True
        self.facts.consumed_args.add(id(call))
        return sizes


def _returns_remaining(call: cst.Call) -> bool:
    """``return_remaining_strings=True``: the parse returns the unknown arguments after the dataclasses."""
    return any(
        arg.keyword is not None and arg.keyword.value == "return_remaining_strings" and literal(arg.value) is True
        for arg in call.args
    )


def _callee_name(func: cst.BaseExpression) -> str:
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


def _nodes(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    yield node
    for child in node.children:
        yield from _nodes(child)


def literal_entries(value: cst.BaseExpression) -> dict[str, cst.BaseExpression] | None:
    """Key -> value of ``{"a": 1}`` or ``dict(a=1)``; None for anything else."""
    if isinstance(value, cst.Dict):
        entries = {}
        for element in value.elements:
            if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
                return None
            entries[element.key.evaluated_value] = element.value
        return entries
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "dict":
        if any(arg.keyword is None for arg in value.args):
            return None
        return {arg.keyword.value: arg.value for arg in value.args}
    return None


def _trn_config_arg(call: cst.Call) -> cst.Arg | None:
    """The ``trn_config`` argument of a training ``from_pretrained`` (second positional or keyword)."""
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "trn_config":
            return arg
    return positional[1] if len(positional) > 1 else None


def trn_config_sizes(call: cst.Call, literal_only: bool) -> TrnSizes | None:
    """DistributedConfig sizes from a ``TrainingNeuronConfig(...)`` call, or None when not readable."""
    bound = bind_args(call, hf.TRN_CONFIG_ORDER)
    if bound is None:
        return None
    sizes = TrnSizes()
    for name, size in hf.PARALLEL_FIELDS.items():
        arg = bound.get(name)
        if arg is None:
            continue
        value = literal(arg.value)
        if value is UNKNOWN and literal_only:
            return None
        if value is UNKNOWN or (isinstance(value, int) and value > 1):
            sizes.sizes[size] = code_of(arg.value)
    for name, default in hf.TRN_CONFIG_DEFAULTS.items():
        arg = bound.get(name)
        if arg is not None and literal(arg.value) != default:
            sizes.dropped.append(name)
    return sizes


# ----- building the replacement calls ----------------------------------------------------------------


@dataclass
class ArgumentEdits:
    """Keyword edits computed for one call (or one dict literal of keyword arguments)."""

    drop: set[str] = field(default_factory=set)
    rename: dict[str, str] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)
    add: list[tuple[str, str]] = field(default_factory=list)
    # model_init_kwargs entries to add (name -> code) when that argument is a literal
    init_kwargs: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    reviews: list[str] = field(default_factory=list)
    manuals: list[str] = field(default_factory=list)
    # a from_pretrained in this file already took the parallel sizes over
    consumed: bool = False


def edited_args(args: Iterable[cst.Arg], edits: ArgumentEdits) -> list[cst.Arg]:
    out: list[cst.Arg] = []
    for arg in args:
        name = arg.keyword.value if arg.keyword else None
        if name in edits.drop:
            continue  # with_args moves the comment lines above it to the next argument
        if name in edits.values:
            arg = arg.with_changes(value=cst.parse_expression(edits.values[name]))
        if name == "model_init_kwargs" and edits.init_kwargs:
            arg = arg.with_changes(value=_with_entries(arg.value, edits.init_kwargs))
        if name in edits.rename:
            arg = arg.with_changes(keyword=cst.Name(edits.rename[name]))
        out.append(arg)
    out.extend(new_keyword(name, value) for name, value in edits.add)
    return out


def _with_entries(value: cst.BaseExpression, entries: dict[str, str]) -> cst.BaseExpression:
    """``{"a": 1}`` / ``dict(a=1)`` with more entries (the caller checked it is one of those)."""
    if isinstance(value, cst.Call):
        return with_args(value, [*value.args, *(new_keyword(k, v) for k, v in entries.items())])
    added = [cst.DictElement(cst.SimpleString(f'"{k}"'), cst.parse_expression(v)) for k, v in entries.items()]
    return with_elements(value, [*value.elements, *added])


def edited_dict(node: cst.Dict, edits: ArgumentEdits) -> cst.Dict:
    elements: list[cst.DictElement] = []
    for element in node.elements:
        key = element.key.evaluated_value  # only literal dicts are edited (see literal_entries)
        if key in edits.drop:
            continue  # with_elements moves the comment lines above it to the next entry
        if key in edits.values:
            element = element.with_changes(value=cst.parse_expression(edits.values[key]))
        if key == "model_init_kwargs" and edits.init_kwargs:
            element = element.with_changes(value=_with_entries(element.value, edits.init_kwargs))
        if key in edits.rename:
            quote = element.key.quote
            element = element.with_changes(key=cst.SimpleString(f"{quote}{edits.rename[key]}{quote}"))
        elements.append(element)
    elements += [cst.DictElement(cst.SimpleString(f'"{k}"'), cst.parse_expression(v)) for k, v in edits.add]
    return with_elements(node, elements)


def rebuilt(call: cst.Call, args: list[cst.Arg]) -> cst.Call:
    """``call`` with ``args`` in its layout; with none left, plain ``f()``."""
    if not args:
        return call.with_changes(args=[], whitespace_before_args=cst.SimpleWhitespace(""))
    return with_args(call, args)


def positional_to_keywords(call: cst.Call, target: Target) -> cst.Call | None:
    """Positional arguments past ``target.keep`` passed by keyword, named by the legacy signature;
    None when there are such arguments but the legacy signature is not known."""
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    if len(positional) <= target.keep:
        return call
    if len(positional) > len(target.legacy_params) or any(arg.star == "*" for arg in call.args):
        return None
    args, position = [], 0
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            if position >= target.keep:
                arg = keyword_arg(arg, target.legacy_params[position])
            position += 1
        args.append(arg)
    return call.with_changes(args=args)


# ----- rules -----------------------------------------------------------------------------------------


class RenameRule(Rule):
    """Shared plumbing: the stock name for a Target, reports on version tables, markers."""

    targets: ClassVar[dict[str, Target]] = {}

    @staticmethod
    def tables(targets: dict[str, Target], call: str, methods: tuple[str, ...] = ()):
        """``calls`` and ``references`` for ``targets``; ``Class.method(...)`` calls too, for ``methods``."""
        calls = dict.fromkeys(targets, call)
        calls.update(dict.fromkeys(with_methods(tuple(targets), *methods), "method_call"))
        return calls, dict.fromkeys(targets, "rename_reference")

    def method_call(self, original, updated, qname: str):
        owner, method = qname.rsplit(".", 1)
        target = self.targets[owner]
        message = f"{owner.rsplit('.', 1)[1]}.{method} -> {self.module_of(target)}.{target.name}.{method}"
        stock = self.ctx.expr(self.stock_name(target))
        return Edit(updated.with_changes(func=updated.func.with_changes(value=stock)), message=message)

    def stock_name(self, target: Target) -> str:
        return self.ctx.require_from_import(target.module, target.name)

    def rename_reference(self, original, updated, qname: str):
        target = self.targets[qname]
        name = self.stock_name(target)
        review = self.subclass_review(target) if id(original) in script_facts(self.ctx).class_bases else ""
        message = f"{qname.rsplit('.', 1)[1]} -> {self.module_of(target)}.{target.name}"
        return Edit(self.ctx.expr(name), message=message, review=review)

    def subclass_review(self, target: Target) -> str:
        """What to check in a subclass: it may override methods the stock class does not have."""
        return ""

    def module_of(self, target: Target) -> str:
        return target.module

    def finish(self, legacy: str, target: Target, edits: ArgumentEdits, node: cst.CSTNode, replacement) -> Edit:
        return self.report_edits(f"{legacy} -> {self.module_of(target)}.{target.name}", edits, node, replacement)

    def report_edits(self, headline: str, edits: ArgumentEdits, node: cst.CSTNode, replacement) -> Edit:
        """TODOs for what is left to do, and the edit: its note for the report, one review marker for the rest."""
        for message in edits.manuals:
            self.ctx.manual(self.meta, node, message)
        message = "; ".join([headline, *edits.notes])
        if edits.reviews:
            return Edit(replacement, message=message, review="; ".join(edits.reviews))
        return Edit(replacement, message=message, safe=self.meta.safety == REVIEW)

    def accepts(self, node: cst.CSTNode, owner: str, name: str, table_owner: str = "") -> bool:
        """Whether the target release of ``owner`` takes ``name``: the installed source when there is
        one (an info finding says when the version table disagrees), else the version table."""
        table = hf.table_says(table_owner or owner, name)
        real = hf.installed_fields(owner)
        if real is None:
            return True if table is None else table
        present = name in real
        if table is not None and table != present:
            seen = self.ctx.fact(REPORTED_DISAGREEMENTS)
            if (owner, name) not in seen:
                seen.add((owner, name))
                package = hf.OWNER_PACKAGE.get(owner, "transformers")
                verb = "has" if present else "has no"
                self.ctx.report(
                    self.meta,
                    node,
                    f"the version table disagrees with the installed {hf.version_text(package)}, whose {owner} "
                    f"{verb} `{name}`; following the installed release",
                )
        return present


class TrainerRule(RenameRule):
    """NeuronTrainer-like classes: rename, ``tokenizer=`` -> ``processing_class=``."""

    def rename_call(self, original: cst.Call, updated: cst.Call, qname: str):
        target = self.targets[qname]
        legacy = qname.rsplit(".", 1)[1]
        call = positional_to_keywords(updated, target)
        if call is None:
            self.ctx.manual(
                self.meta, original, f"pass the arguments after the {target.keep}th by keyword, then run again"
            )
            return updated
        edits = ArgumentEdits()
        self.processing_class(original, call, edits)
        func = self.ctx.expr(self.stock_name(target))
        renamed = rebuilt(call.with_changes(func=func), edited_args(call.args, edits))
        return self.finish(legacy, target, edits, original, renamed)

    def processing_class(self, node: cst.Call, call: cst.Call, edits: ArgumentEdits) -> None:
        keywords = {arg.keyword.value for arg in call.args if arg.keyword}
        if "tokenizer" not in keywords:
            return
        self.accepts(node, "Trainer", "tokenizer")
        if not self.accepts(node, "Trainer", "processing_class"):
            return
        if "processing_class" in keywords:
            # The legacy trainer let tokenizer= win over processing_class=.
            edits.drop.add("processing_class")
        edits.rename["tokenizer"] = "processing_class"
        edits.notes.append("tokenizer= passed as processing_class=")

    def subclass_review(self, target: Target) -> str:
        return f"check the methods this subclass overrides against {target.module}.{target.name}"


PARSER_FLAGS_GONE = (
    "command-line flags of Neuron-only fields (--tensor_parallel_size, --zero_1, ...) are gone; "
    "pass --torch_compile true --torch_compile_backend neuron"
)


class ArgumentsRule(RenameRule):
    """NeuronTrainingArguments-like dataclasses: the field map of hf_fields, per target release."""

    # Its TODOs are about fields the edit dropped (a parallel size to pass where the model is built): the
    # next run sees a stock class and cannot write them again, so it keeps them.
    follow_up_todos = True

    def rename_call(self, original: cst.Call, updated: cst.Call, qname: str):
        target = self.targets[qname]
        legacy = qname.rsplit(".", 1)[1]
        call = positional_to_keywords(updated, target)
        if call is None:
            self.ctx.manual(self.meta, original, "pass every argument after output_dir by keyword, then run again")
            return updated
        facts = script_facts(self.ctx)
        entries = {arg.keyword.value: arg.value for arg in call.args if arg.keyword}
        context = {}  # every keyword the class gets, spread ones included, as far as they can be read
        unread, migrated = [], []
        for arg in original.args:
            if arg.star == "**":
                spread = facts.spreads.get(id(arg.value), Spread(entries=None))
                if spread.arguments:
                    migrated.append(f"`**{code_of(arg.value)}` holds {spread.arguments}'s TrainingArguments fields")
                    continue
                if spread.entries is None:
                    unread.append(code_of(arg.value))
                    continue
                context.update(spread.entries)
                refused = self.refused_keys(original, spread.entries, target)
                if refused and not spread.editable:
                    self.ctx.manual(
                        self.meta,
                        original,
                        f"remove {', '.join(refused)} from `{code_of(arg.value)}`: {target.name} does not take them",
                    )
        edits = self.plan(
            original, entries, target, context={**context, **entries}, additions=not unread, compile_flags=not migrated
        )
        if migrated:
            # the dict already has torch_compile and torch_compile_backend: passing them again is a TypeError
            edits.notes += [f"{text}, torch_compile with them" for text in migrated]
        edits.consumed = id(original) in facts.consumed_args
        if unread:
            settings = 'torch_compile=True, torch_compile_backend="neuron"'
            if target.sft and "padding_free" not in entries:
                settings += ", padding_free=False"  # nothing was added: the spread may set it
            edits.reviews.append(
                f"`**{unread[0]}` is not read here: drop its Neuron-only keys (e.g. tensor_parallel_size, zero_1) "
                f"and set {settings}"
            )
        self.parallel(original, entries, target, edits)
        func = self.ctx.expr(self.stock_name(target))
        renamed = rebuilt(call.with_changes(func=func), edited_args(call.args, edits))
        return self.finish(legacy, target, edits, original, renamed)

    def refused_keys(self, node, keys: Iterable[str], target: Target) -> list[str]:
        """The keys of a spread dict that the stock class would reject (or that mean something else)."""
        refused = []
        for key in sorted(keys):
            if key in hf.NEURON_ONLY_FIELDS or (target.sft and key in hf.SFT_RENAMED):
                refused.append(key)
            elif key in hf.VERSIONED_FIELDS:
                if not self.accepts(node, target.owner, key, "TrainingArguments"):
                    refused.append(key)
            elif not self.accepts(node, target.owner, key):
                refused.append(key)
        return refused

    def rename_reference(self, original, updated, qname: str):
        edit = super().rename_reference(original, updated, qname)
        facts = script_facts(self.ctx)
        if edit.review or id(original) not in facts.parser_elements:
            return edit
        if not facts.fields.added:
            return replace(edit, review=PARSER_FLAGS_GONE)
        kept = ", ".join(f"--{name}" for name in facts.fields.added)
        return replace(
            edit,
            review=(
                f"command-line flags of the other Neuron-only fields are gone, {facts.fields.own_class} takes {kept} "
                "over; pass --torch_compile true --torch_compile_backend neuron"
            ),
        )

    def subclass_review(self, target: Target) -> str:
        return f"check this subclass's fields and defaults against {target.module}.{target.name}"

    # ----- one dict literal spread into the call ------------------------------------------------
    def leave_Dict(self, original: cst.Dict, updated: cst.Dict):
        return self.spread_dict(original, updated)

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        return self.spread_dict(original, updated)

    def spread_dict(self, original, updated):
        """A ``{...}`` / ``dict(...)`` literal whose only use is ``**`` into a legacy arguments call."""
        target = script_facts(self.ctx).dict_edits.get(id(original))
        if target is None or target not in self.targets.values():
            return updated
        if isinstance(updated, cst.Dict):
            entries = {element.key.evaluated_value: element.value for element in updated.elements}
        else:
            entries = {arg.keyword.value: arg.value for arg in updated.args}
        edits = self.plan(original, entries, target, context=None, additions=False)
        self.parallel(original, entries, target, edits)
        if isinstance(updated, cst.Dict):
            result = edited_dict(updated, edits)
        else:
            result = rebuilt(updated, edited_args(updated.args, edits))
        result = result if code_of(result) != code_of(updated) else updated
        return self.report_edits(f"keyword arguments for {target.name} edited", edits, original, result)

    # ----- the field map -------------------------------------------------------------------------
    def plan(
        self, node, entries: dict[str, cst.BaseExpression], target: Target, *, context, additions, compile_flags=True
    ) -> ArgumentEdits:
        """The edits for ``entries``; with ``context`` (every keyword the call gets) also the reviews that
        look at several fields and the fields to add. A spread dict is planned without: its call does that."""
        edits = ArgumentEdits()
        present = set(context or entries)
        for name, value in entries.items():
            if name in hf.PARALLEL_FIELDS:
                edits.drop.add(name)
            elif name in hf.DROPPED_FIELDS:
                edits.drop.add(name)
                edits.notes.append(f"`{name}` dropped: {hf.DROPPED_FIELDS[name]}")
            elif name in hf.REVIEWED_FIELDS:
                edits.drop.add(name)
                self.reviewed_field(name, value, entries, edits)
            elif name in hf.VERSIONED_FIELDS:
                if not self.accepts(node, target.owner, name, "TrainingArguments"):
                    self.removed_field(name, value, entries, edits)
            elif target.sft and name in hf.SFT_RENAMED:
                new = hf.SFT_RENAMED[name]
                edits.rename[name] = new
                if new in entries:
                    edits.drop.add(new)
                    edits.notes.append(
                        f"`{name}` renamed `{new}`, replacing {new}={code_of(entries[new]).strip()}: "
                        f"NeuronSFTConfig let {name} win"
                    )
                else:
                    edits.notes.append(f"`{name}` renamed `{new}`")
            elif target.sft and name == "padding_free":
                if literal(value) is not False:
                    edits.values[name] = "False"
                    edits.notes.append(
                        f"padding_free={code_of(value).strip()} set to False: NeuronSFTConfig always forced it off "
                        "(padding-free batches change shape)"
                    )
            elif name in hf.RENAMED_FIELDS and self.accepts(node, target.owner, hf.RENAMED_FIELDS[name]):
                new = hf.RENAMED_FIELDS[name]
                if new in present:
                    edits.drop.add(name)
                else:
                    edits.rename[name] = new
                edits.notes.append(f"`{name}` is now `{new}`")
            elif name == "ddp_backend" and literal(value) in ("xla", "neuron"):
                edits.drop.add(name)
                edits.notes.append("ddp_backend dropped: accelerate picks the neuron process-group backend")
            elif not self.accepts(node, target.owner, name):
                package = hf.OWNER_PACKAGE[target.owner]
                edits.manuals.append(
                    f"`{name}` is not a {target.name} field in {hf.version_text(package)}: remove or rename it"
                )
        if context is None:
            return edits
        self.mixed_precision(context, edits)
        if target.sft:
            self.static_shapes(context, edits)
        if additions:
            if compile_flags and not any(name.startswith("torch_compile") for name in present):
                edits.add += [("torch_compile", "True"), ("torch_compile_backend", '"neuron"')]
            if target.sft and "padding_free" not in present:
                edits.add.append(("padding_free", "False"))
                edits.notes.append("padding_free=False added: NeuronSFTConfig always forced it off")
        return edits

    def reviewed_field(self, name, value, entries, edits: ArgumentEdits) -> None:
        harmless = hf.REVIEWED_HARMLESS.get(name, UNKNOWN)
        if harmless is not UNKNOWN and literal(value) is harmless:
            edits.notes.append(f"`{name}` dropped: it was off")
        elif name == "zero_1":
            pass  # parallel() turns it into FSDP, or says why not
        elif name == "neuron_cc_optlevel":
            edits.reviews.append(hf.REVIEWED_FIELDS[name])
        elif not self.full_bf16(entries):
            # master weights and stochastic rounding only acted in full-bf16 training
            edits.notes.append(f"`{name}` dropped: {hf.REVIEWED_FIELDS[name]}")

    @staticmethod
    def full_bf16(entries) -> bool:
        bf16 = entries.get("bf16")
        return bf16 is not None and literal(bf16) is not False and literal(entries.get("use_autocast")) is not True

    def mixed_precision(self, entries, edits: ArgumentEdits) -> None:
        if self.full_bf16(entries):
            edits.reviews.append(
                "bf16=True was pure bf16 with fp32 master weights here; Trainer's bf16=True is autocast "
                "over fp32 weights"
            )

    def removed_field(self, name: str, value, entries, edits: ArgumentEdits) -> None:
        version = hf.version_text("transformers")
        edits.drop.add(name)
        if name == "overwrite_output_dir":
            edits.notes.append(f"overwrite_output_dir dropped: {version} always writes into output_dir")
        elif name == "warmup_ratio":
            self.warmup_ratio(value, entries, edits)
        elif name == "logging_dir":
            directory = literal(value)
            if directory is None:
                return
            if isinstance(directory, str):
                os_name = self.ctx.require_import("os")
                self.ctx.add_setup(
                    self.meta,
                    value,
                    f'{os_name}.environ.setdefault("TENSORBOARD_LOGGING_DIR", {code_of(value)})',
                    "TrainingArguments has no logging_dir since transformers 5.2; TensorBoard reads this instead",
                    unless="TENSORBOARD_LOGGING_DIR",
                )
                edits.notes.append("logging_dir moved to TENSORBOARD_LOGGING_DIR")
            else:
                edits.reviews.append(
                    f'logging_dir is gone in {version}: set os.environ["TENSORBOARD_LOGGING_DIR"] = '
                    f"{code_of(value)} before this line"
                )

    def warmup_ratio(self, value, entries, edits: ArgumentEdits) -> None:
        ratio = literal(value)
        steps = entries.get("warmup_steps")
        if ratio == 0 and ratio is not UNKNOWN:
            edits.notes.append("warmup_ratio=0 dropped")
            return
        if steps is None:
            edits.drop.discard("warmup_ratio")
            edits.rename["warmup_ratio"] = "warmup_steps"
            edits.notes.append("warmup_ratio passed as warmup_steps, which takes a ratio below 1")
            if isinstance(ratio, (int, float)) and ratio >= 1:
                edits.reviews.append("warmup_steps of 1 or more counts steps, not a ratio: use a value below 1")
            return
        count = literal(steps)
        if count == 0 and count is not UNKNOWN:
            edits.drop.discard("warmup_ratio")
            edits.drop.add("warmup_steps")
            edits.rename["warmup_ratio"] = "warmup_steps"
            edits.notes.append("warmup_ratio passed as warmup_steps (warmup_steps was 0)")
        elif isinstance(count, (int, float)):
            edits.notes.append("warmup_ratio dropped: warmup_steps overrode it")
        else:
            edits.reviews.append(
                f"warmup_ratio dropped: when warmup_steps is 0, pass the ratio as warmup_steps={code_of(value)}"
            )

    def static_shapes(self, entries, edits: ArgumentEdits) -> None:
        packing = entries.get("packing")
        if packing is not None and literal(packing) is not False:
            strategy = entries.get("packing_strategy")
            if strategy is None or literal(strategy) in ("bfd", "bfd_split", UNKNOWN):
                edits.reviews.append(
                    'bfd packing turns padding-free on and shapes vary: use packing_strategy="wrapped" or packing=False'
                )
        if "pad_to_multiple_of" not in entries:
            edits.notes.append(hf.SFT_PADDING_DEFAULT)
        length = entries.get("max_seq_length", entries.get("max_length"))
        value = literal(length)
        if isinstance(value, int) and not isinstance(value, bool) and value > hf.RECIPE_MAX_LENGTH:
            edits.reviews.append(
                f"max_length={value} is past {hf.RECIPE_MAX_LENGTH}, the longest sequence of the published Trainium "
                "fine-tuning recipe: check device memory and compile time before a long run"
            )

    def parallel(self, node, entries, target: Target, edits: ArgumentEdits) -> None:
        """tensor/pipeline parallel sizes, and ZeRO-1 as FSDP over the data-parallel ranks: into
        SFTConfig.model_init_kwargs, or a TODO with the code."""
        sizes = {}
        for name, size in hf.PARALLEL_FIELDS.items():
            value = entries.get(name)
            if value is None or literal(value) == 1:
                continue
            sizes[size] = code_of(value).strip()
        zero_1 = entries.get("zero_1")
        sharded = zero_1 is not None and literal(zero_1) is True
        if zero_1 is not None and literal(zero_1) is UNKNOWN:
            edits.reviews.append(f"zero_1={code_of(zero_1).strip()} dropped: {zero_1_step(sizes.get('tp_size'))}")
        if sharded and "pp_size" in sizes:
            edits.reviews.append(f"zero_1 dropped: {ZERO_1_WITH_PIPELINE}")
            sharded = False
        if not sizes and not sharded:
            return
        if edits.consumed:
            edits.notes.append("parallel sizes moved to the from_pretrained call that builds the model")
            return
        literal_sizes = all(literal(entries[n]) is not UNKNOWN for n in hf.PARALLEL_FIELDS if n in entries)
        init = entries.get("model_init_kwargs")
        if target.sft and literal_sizes and (init is None or literal_entries(init) is not None):
            if sharded:
                sizes["fsdp_size"] = fsdp_size_code(self.ctx, sizes.get("tp_size"))
                edits.reviews.append(ZERO_1_AS_FSDP)
            config = self.ctx.require_from_import("transformers.distributed", "DistributedConfig")
            code = f"{config}({', '.join(f'{k}={v}' for k, v in sizes.items())})"
            if init is None:
                edits.add.append(("model_init_kwargs", f'{{"distributed_config": {code}}}'))
            else:
                edits.init_kwargs["distributed_config"] = code
            edits.reviews.append(
                "model_init_kwargs now holds the parallel sizes: it applies only if SFTTrainer gets a model id"
            )
            return
        if sharded:
            world = 'int(os.environ["WORLD_SIZE"])'
            sizes["fsdp_size"] = f'{world} // {sizes["tp_size"]}' if "tp_size" in sizes else world
        arguments = ", ".join(f"{k}={v}" for k, v in sizes.items())
        edits.manuals.append(
            f"pass distributed_config=DistributedConfig({arguments}) (transformers.distributed) to the model's "
            "from_pretrained and launch with torchrun"
        )


# ZeRO-1 sharded the optimizer state over the data-parallel ranks (world size // tensor-parallel size); FSDP
# over the same ranks shards it too, with the parameters and gradients.
ZERO_1_AS_FSDP = (
    "zero_1 became FSDP over the data-parallel ranks (fsdp_size = WORLD_SIZE // tp_size): it shards the parameters "
    "and gradients too, not only the optimizer state"
)
ZERO_1_WITH_PIPELINE = "DistributedConfig cannot combine FSDP (fsdp_size) with pipeline parallelism yet"


def zero_1_step(tp_size: str | None) -> str:
    """What replaces ZeRO-1 when it is on."""
    world = 'int(os.environ["WORLD_SIZE"])'
    config = f"tp_size={tp_size}, fsdp_size={world} // {tp_size}" if tp_size else f"fsdp_size={world}"
    return f"when it is on, shard with FSDP over the data-parallel ranks: DistributedConfig({config})"


def fsdp_size_code(ctx, tp_size: str | None) -> str:
    """The data-parallel size under torchrun: the world size over the tensor-parallel size (at least 1, so
    the arguments still build in one process, where loading a sharded model fails as it did)."""
    os_name = ctx.require_import("os")
    world = f'int({os_name}.environ.get("WORLD_SIZE", "1"))'
    return f"max(1, {world} // {tp_size})" if tp_size else world


# NeuronAccelerator keyword arguments with no Accelerator counterpart.
ACCELERATOR_ONLY = {
    "trn_config": "tensor parallelism comes from the model: from_pretrained(..., distributed_config=DistributedConfig(tp_size=N))",
    "mp_plugin": "tensor parallelism comes from the model: from_pretrained(..., distributed_config=DistributedConfig(tp_size=N))",
}
MIXED_PRECISION_MODES = {"AUTOCAST_BF16": '"bf16"', "NO": None}
IS_MAIN_WORKER = frozenset(
    {
        *optimum_names("is_main_worker", "utils", "utils.misc", top_level=False),
        # data-parallel rank 0 of tensor-parallel rank 0 of the last pipeline stage: global rank 0 once
        # the model is sharded by DistributedConfig (which has no pipeline stages)
        *optimum_names("is_logging_process", "models.training.training_utils", top_level=False),
    }
)
IS_PRECOMPILATION = frozenset(optimum_names("is_precompilation", "utils", "utils.misc", top_level=False))
LAZY_LOAD = frozenset(optimum_names("lazy_load_for_parallelism", "distributed", "distributed.utils", top_level=False))
LAZY_LOAD_PARAMS = ("tensor_parallel_size", "pipeline_parallel_size")


class _AddDistributedConfig(cst.CSTTransformer):
    """``distributed_config=...`` on the ``from_pretrained`` calls that choose no placement."""

    def __init__(self, code: str) -> None:
        super().__init__()
        self.code = code
        self.added = 0

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if not _is_model_load(updated):
            return updated
        if any(arg.keyword is not None and arg.keyword.value in ("distributed_config", "device_map") for arg in updated.args):
            return updated
        if any(arg.star for arg in updated.args):
            return updated  # a **kwargs may place the model already
        self.added += 1
        return with_args(updated, [*updated.args, new_keyword("distributed_config", self.code)])


# ``<Class>.from_pretrained`` loads that are not the model: nothing to shard.
NOT_MODELS = ("Tokenizer", "Processor", "Config", "FeatureExtractor")


def _is_model_load(call: cst.Call, method: str = "from_pretrained") -> bool:
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == method):
        return False
    owner = code_of(func.value).rsplit(".", 1)[-1]
    return not any(word in owner for word in NOT_MODELS)


def _count_loads(node: cst.CSTNode) -> int:
    return sum(1 for child in _nodes(node) if isinstance(child, cst.Call) and _is_model_load(child))


def _count_builds(node: cst.CSTNode) -> int:
    """``<Model>.from_config(...)`` calls: a model built without weights, which no DistributedConfig shards."""
    return sum(1 for child in _nodes(node) if isinstance(child, cst.Call) and _is_model_load(child, "from_config"))


# optimum.neuron.utils public names (0.4.5 _import_structure) -> the next step for each.
def imports_optimum_neuron(ctx) -> bool:
    modules = [*ctx.existing_imports, *(module for module, _ in ctx.existing_from_imports)]
    return any(module == "optimum.neuron" or module.startswith("optimum.neuron.") for module in modules)


# optimum.neuron.utils.testing_utils decorator -> the pytest mark it set besides skipping without Neuron
TEST_DECORATORS = {"requires_neuronx": None, "is_trainium_test": "is_trainium_test",
                   "is_inferentia_test": "is_inferentia_test", "slow": "slow"}  # fmt: skip
TESTING_UTILS = {
    qname: name
    for name in TEST_DECORATORS
    for qname in optimum_names(name, "utils.testing_utils", top_level=False)
}
SKIP_DECORATOR = "requires_neuron_device"
SKIP_WHY = "optimum-neuron's test decorators skipped a test without a Neuron device; this one does the same"
