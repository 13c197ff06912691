"""What the optimum_inference rules share: helpers, constants and base classes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import ScopeProvider

from neuron_migrate.migrate.context import FileContext, code_of
from neuron_migrate.migrate.guards import is_shim
from neuron_migrate.rules import hf_fields as hf
from neuron_migrate.rules.base import Edit, Fact, Rule, StatementReplacement
from neuron_migrate.rules.calls import UNKNOWN, keyword_arg, literal, new_keyword
from neuron_migrate.rules.optimum_names import optimum_names, with_methods
from neuron_migrate.rules.xla_step.common import with_args

DOCS_HF_NATIVE = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/torchneuron-resources.html"
DOCS_WHAT_CHANGES = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html"
DOCS_STATIC_SHAPES = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html"
DOCS_HF_INFERENCE = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/_sources/torch/tutorials/"
    "tutorial-hf-inference-torch-compile.rst"
)
DOCS_STATIC_CACHE = "https://huggingface.co/docs/transformers/llm_optims"
DOCS_NO_XLA_INFERENCE = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/announcements/neuron2.x/"
    "announce-no-support-torch-xla-inference-trn.html"
)
DOCS_SENTENCE_TRANSFORMERS = "https://sbert.net/docs/package_reference/sentence_transformer/SentenceTransformer.html"
OPTIMUM_TRIGGERS = (b"optimum",)
PRECOMPILED_ORG = "aws-neuron/"  # the Hub organisation of the models optimum-neuron compiled
# ----- what each legacy keyword of a loading call becomes --------------------------------------

# The shapes the model was compiled for. They are not load arguments any more: the caller keeps
# them by padding (each new shape compiles a new graph).
INPUT_SHAPES = (
    "batch_size",
    "sequence_length",
    "num_choices",
    "num_beams",
    "height",
    "width",
    "image_size",
    "patch_size",
    "num_channels",
    "audio_sequence_length",
    "num_images_per_prompt",
    "text_batch_size",
    "image_batch_size",
    "n_positions",  # the sequence length of transformers-neuronx and early optimum-neuron decoders
)
# Export-time settings with no load-time counterpart, and why each goes.
EXPORT_ONLY = {
    "export": "the model compiles when it first runs",
    "compiler_workdir": "compiler artifacts go to TORCH_NEURONX_DEBUG_DIR",
    "optlevel": "compiler options go in NEURON_CC_FLAGS",
    "disable_fast_relayout": "compiler options go in NEURON_CC_FLAGS",
    "instance_type": "code compiles for the device it runs on",
    "inline_weights_to_neff": "no compiled artifact holds the weights",
    "disable_neuron_cache": "the compile cache is set with TORCH_NEURONX_NEFF_CACHE_DIR",
    "disable_fallback": "CPU fallback is set with TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION",
    "dynamic_batch_size": "each batch size compiles its own graph: pad batches to one size",
    "task": "the class sets the task",
    "file_name": "there is no compiled *.neuron file to load",
    "model_save_dir": "there is no compiled artifact to keep",
    "neuron_config": "there is no compiled artifact to describe",
    "data_parallel_mode": "run one process per NeuronCore with torchrun instead",
    "device_ids": "run one process per NeuronCore with torchrun instead",
    "load_weights": "the weights load with the model",
    **dict.fromkeys(
        (
            "encoder_file_name",
            "decoder_file_name",
            "text_encoder_file_name",
            "text_encoder_2_file_name",
            "unet_file_name",
            "transformer_file_name",
            "vae_encoder_file_name",
            "vae_decoder_file_name",
            "controlnet_file_name",
            "image_encoder_file_name",
        ),
        "there is no compiled *.neuron file to load",
    ),
}
TENSOR_PARALLEL = ("tensor_parallel_size", "num_cores")  # num_cores: the deprecated alias
RENAMED = {"use_auth_token": "token", "torch_dtype": "dtype"}
# auto_cast_type -> torch dtype of the weights; tf32 only changed matmul precision (None).
CAST_TYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "f32": "float32", "tf32": None}
NO_AUTO_CAST = (None, "none")
NEURON_SPREAD_KEYS = "export, input shapes (batch_size, sequence_length, ...), auto_cast*, num_cores, compiler flags"
# ----- the classes ------------------------------------------------------------------------------

# optimum-neuron task model -> (transformers class, modules it is importable from besides the top level)
TASK_MODELS = {
    "NeuronModelForFeatureExtraction": ("AutoModel", ("modeling",)),
    "NeuronModelForMaskedLM": ("AutoModelForMaskedLM", ("modeling",)),
    "NeuronModelForQuestionAnswering": ("AutoModelForQuestionAnswering", ("modeling",)),
    "NeuronModelForSequenceClassification": ("AutoModelForSequenceClassification", ("modeling",)),
    "NeuronModelForTokenClassification": ("AutoModelForTokenClassification", ("modeling",)),
    "NeuronModelForMultipleChoice": ("AutoModelForMultipleChoice", ("modeling",)),
    "NeuronModelForImageClassification": ("AutoModelForImageClassification", ("modeling",)),
    "NeuronModelForSemanticSegmentation": ("AutoModelForSemanticSegmentation", ("modeling",)),
    "NeuronModelForObjectDetection": ("AutoModelForObjectDetection", ("modeling",)),
    "NeuronModelForCTC": ("AutoModelForCTC", ("modeling",)),
    "NeuronModelForAudioClassification": ("AutoModelForAudioClassification", ("modeling",)),
    "NeuronModelForAudioFrameClassification": ("AutoModelForAudioFrameClassification", ("modeling",)),
    "NeuronModelForXVector": ("AutoModelForAudioXVector", ("modeling",)),
    "NeuronModelForSeq2SeqLM": ("AutoModelForSeq2SeqLM", ("modeling_seq2seq",)),
    "NeuronBertModel": ("BertModel", ("models.inference.bert", "models.inference.bert.modeling_bert")),
    "NeuronBertForMaskedLM": ("BertForMaskedLM", ("models.inference.bert", "models.inference.bert.modeling_bert")),
    "NeuronBertForQuestionAnswering": (
        "BertForQuestionAnswering",
        ("models.inference.bert", "models.inference.bert.modeling_bert"),
    ),
    "NeuronBertForSequenceClassification": (
        "BertForSequenceClassification",
        ("models.inference.bert", "models.inference.bert.modeling_bert"),
    ),
    "NeuronBertForTokenClassification": (
        "BertForTokenClassification",
        ("models.inference.bert", "models.inference.bert.modeling_bert"),
    ),
    "NeuronBertForMultipleChoice": (
        "BertForMultipleChoice",
        ("models.inference.bert", "models.inference.bert.modeling_bert"),
    ),
    "NeuronCLIPModel": ("CLIPModel", ("models.inference.clip", "models.inference.clip.modeling_clip")),
    "NeuronCLIPForImageClassification": (
        "CLIPForImageClassification",
        ("models.inference.clip", "models.inference.clip.modeling_clip"),
    ),
    "NeuronWhisperForConditionalGeneration": (
        "WhisperForConditionalGeneration",
        ("models.inference.whisper", "models.inference.whisper.modeling_whisper"),
    ),
    "NeuronYolosForObjectDetection": (
        "YolosForObjectDetection",
        ("models.inference.yolos", "models.inference.yolos.modeling_yolos"),
    ),
}
# 0.4.x defines it in models.inference.modeling_utils; up to 0.3 in modeling_decoder.
CAUSAL_LM = optimum_names("NeuronModelForCausalLM", "models.inference.modeling_utils", "modeling_decoder")
SENTENCE_TRANSFORMERS = (
    *optimum_names("NeuronSentenceTransformers", "modeling_sentence_transformers"),
    # up to 0.3
    *optimum_names("NeuronModelForSentenceTransformers", "modeling_sentence_transformers", "modeling"),
)
PIPELINE = optimum_names("pipeline", "pipelines", "pipelines.transformers", "pipelines.transformers.base")


def class_table(classes: dict[str, tuple[str, tuple[str, ...]]]) -> dict[str, str]:
    """Every import path of each legacy class -> its replacement's name."""
    return {qname: target for name, (target, modules) in classes.items() for qname in optimum_names(name, *modules)}


TASK_MODEL_TARGETS = class_table(TASK_MODELS)


# ----- reading a loading call --------------------------------------------------------------------


@dataclass
class Keyword:
    """One keyword argument of a legacy call, written in the call or found in a literal dict spread."""

    name: str
    value: cst.BaseExpression
    source: str = ""  # name of the dict it came from ("" = written in the call)

    @property
    def code(self) -> str:
        return code_of(self.value).strip()

    def literal(self):
        return literal(self.value, single_token=True)


@dataclass
class Reading:
    """A legacy call's arguments: the plain positionals and the keywords by name."""

    positional: list[int]  # indexes of plain positional arguments
    keywords: dict[str, Keyword]
    spreads: dict[int, str] = field(default_factory=dict)  # index of `**name` read from a literal dict -> name
    unresolved: list[int] = field(default_factory=list)  # indexes of `**expr` that could not be read

    def rebuilt(self, updated: cst.Call, rename: Callable[[Keyword], str | None]) -> list[cst.Arg]:
        """``updated``'s arguments with each keyword kept under the name ``rename`` gives it (None =
        dropped); a literal dict spread becomes the keywords of its keys that are kept."""
        out: list[cst.Arg] = []
        for position, arg in enumerate(updated.args):
            if position in self.positional or position in self.unresolved:
                out.append(arg)
            elif position in self.spreads:
                for keyword in self.keywords.values():
                    name = rename(keyword) if keyword.source == self.spreads[position] else None
                    if name:
                        out.append(keyword_arg(cst.Arg(value=keyword.value), name))
            elif arg.keyword is not None:
                keyword = self.keywords[arg.keyword.value]
                name = rename(keyword) if not keyword.source else None
                if name:
                    out.append(keyword_arg(arg, name))
        return out


def returns_tensors(node: cst.BaseExpression | None) -> bool:
    """``tokenizer(..., return_tensors="pt")`` and the like: a CPU tensor or BatchEncoding."""
    if not isinstance(node, cst.Call):
        return False
    return any(
        arg.keyword is not None and arg.keyword.value == "return_tensors" and literal(arg.value) == "pt"
        for arg in node.args
    )


def dict_literal(node: cst.BaseExpression) -> dict[str, cst.BaseExpression] | None:
    """The keys and values of ``{"a": 1}`` or ``dict(a=1)`` when every key is a plain name."""
    pairs: dict[str, cst.BaseExpression] = {}
    if isinstance(node, cst.Dict):
        for element in node.elements:
            key = literal(element.key, single_token=True) if isinstance(element, cst.DictElement) else None
            if not (isinstance(key, str) and key.isidentifier()):
                return None
            pairs[key] = element.value
        return pairs
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "dict":
        for arg in node.args:
            if arg.keyword is None or arg.star:
                return None
            pairs[arg.keyword.value] = arg.value
        return pairs
    return None


def read_call(call: cst.Call, spread: Callable[[cst.BaseExpression], tuple[str, dict] | None]) -> Reading | None:
    """Read ``call``; ``spread`` resolves a ``**expr`` to (dict name, its pairs) when it is a literal
    dict. None for ``*args``, which cannot be read."""
    reading = Reading(positional=[], keywords={})
    from_dicts: dict[str, Keyword] = {}
    for position, arg in enumerate(call.args):
        if arg.star == "*":
            return None
        if arg.star == "**":
            found = spread(arg.value)
            if found is None:
                reading.unresolved.append(position)
                continue
            name, pairs = found
            reading.spreads[position] = name
            for key, value in pairs.items():
                from_dicts.setdefault(key, Keyword(key, value, source=name))
        elif arg.keyword is None:
            reading.positional.append(position)
        else:
            reading.keywords[arg.keyword.value] = Keyword(arg.keyword.value, arg.value)
    for key, keyword in from_dicts.items():
        # Python would reject a key given twice; the written keyword is the one that reads clearly.
        reading.keywords.setdefault(key, keyword)
    return reading


# ----- the file's loading calls: one scan shared by the loader rules ------------------------------

# qname of a loading call -> the active rule handling it; filled by each rule's visit_Module
LOADER_REGISTRY: Fact[dict[str, NeuronLoaderRule]] = Fact("optimum_loaders", lambda ctx: {})
# every loading call of the file and what it feeds, read once the registry is filled
LOADER_INDEX: Fact[LoaderIndex] = Fact("optimum_loader_index", lambda ctx: LoaderIndex(ctx, ctx.fact(LOADER_REGISTRY)))
# Methods of a loaded model that these rules look at.
WATCHED_METHODS = ("generate", "save_pretrained", "push_to_hub")
NEURON_CONFIG = "neuron_config"  # the compiled model's export settings
INIT = "init_process_group"
INIT_PROCESS_GROUP = frozenset({f"torch.distributed.{INIT}", f"torch.distributed.distributed_c10d.{INIT}"})


def _callee_name(call: cst.Call) -> str:
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""


class _LoaderScan(cst.CSTVisitor):
    """The loading calls of the file, the literal dicts assigned to a name, and method calls on names."""

    def __init__(self, ctx: FileContext, loaders: dict[str, NeuronLoaderRule]) -> None:
        super().__init__()
        self.ctx = ctx
        self.loaders = loaders
        self.shim_depth = 0
        self.loads: list[tuple[cst.Call, NeuronLoaderRule, str]] = []
        self.line_of: dict[int, cst.SimpleStatementLine] = {}  # id(call that is a line's whole value) -> line
        self.target_of: dict[int, cst.BaseExpression] = {}  # id(assigned call) -> its single target
        self.dicts: dict[int, tuple[cst.SimpleStatementLine, dict]] = {}  # id(target Name) -> (line, pairs)
        self.values: dict[int, tuple[cst.SimpleStatementLine, cst.BaseExpression]] = {}  # id(target Name) -> both
        self.method_calls: list[cst.Call] = []
        # ``x.neuron_config.field`` (field) and bare ``x.neuron_config`` (None), outermost node first
        self.neuron_configs: list[tuple[cst.Attribute, str | None]] = []
        self._inner_configs: set[int] = set()
        self.calls: list[cst.Call] = []  # every call of the file (outside shims)
        self.tensor_sources: set[int] = set()  # id(target Name) of ``x = f(..., return_tensors="pt")``
        self.moved: set[int] = set()  # id(Name) of every ``x.to``

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.ctx.guards_kept and is_shim(node, self.ctx.legacy_prefixes, self.ctx.guard_names):
            self.shim_depth += 1
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        super().on_leave(original_node)
        if self.ctx.guards_kept and is_shim(original_node, self.ctx.legacy_prefixes, self.ctx.guard_names):
            self.shim_depth -= 1

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if len(node.body) != 1:
            return
        small = node.body[0]
        value = getattr(small, "value", None)
        if isinstance(value, cst.Call):
            self.line_of[id(value)] = node
        target = None
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target = small.targets[0].target
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            target = small.target
        # Only a plain variable or attribute can be named again to reach the loaded model.
        if isinstance(target, cst.Name) and returns_tensors(small.value):
            self.tensor_sources.add(id(target))
        if isinstance(target, (cst.Name, cst.Attribute)):
            self.target_of[id(small.value)] = target
            if isinstance(target, cst.Name):
                self.values[id(target)] = (node, small.value)
            pairs = dict_literal(small.value) if isinstance(target, cst.Name) else None
            if pairs is not None:
                self.dicts[id(target)] = (node, pairs)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self.shim_depth:
            return
        inner = node.value
        if node.attr.value == "to" and isinstance(inner, cst.Name):
            self.moved.add(id(inner))
        if isinstance(inner, cst.Attribute) and inner.attr.value == NEURON_CONFIG:
            self.neuron_configs.append((node, node.attr.value))
            self._inner_configs.add(id(inner))
        elif node.attr.value == NEURON_CONFIG and id(node) not in self._inner_configs:
            self.neuron_configs.append((node, None))

    def visit_Call(self, node: cst.Call) -> None:
        if self.shim_depth:
            return
        self.calls.append(node)
        for qname in self.ctx.qualified_names(node.func):
            rule = self.loaders.get(qname)
            if rule is not None:
                self.loads.append((node, rule, qname))
                return
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in WATCHED_METHODS:
            self.method_calls.append(node)


@dataclass
class Load:
    """One legacy loading call of the file and what the index decided about it."""

    call: cst.Call
    rule: NeuronLoaderRule
    reading: Reading | None
    migrates: bool
    target: str = ""  # code of the variable it is assigned to
    line: cst.SimpleStatementLine | None = None  # the line it is the whole value of
    qname: str = ""  # the loading function it calls
    # Another load whose settings this one takes (an export's get_neuron_config), and the variable
    # that carried them ("" when the call is written in place).
    linked: Load | None = None
    linked_through: str = ""


class LoaderIndex:
    """What the loader rules need to know about the whole file before rewriting any of it: each
    loading call read (with its literal dict spreads), the dict assignments that only fed migrated
    calls (deleted), and the variables that hold a loaded model (for generate/save_pretrained)."""

    def __init__(self, ctx: FileContext, loaders: dict[str, NeuronLoaderRule]) -> None:
        self.ctx = ctx
        scan = _LoaderScan(ctx, loaders)
        ctx.module.visit(scan)
        self.scan = scan
        self._scopes = None
        self.loads: dict[int, Load] = {}
        # id(line) -> (rule, what the deletion says): assignments that only fed migrated calls
        self.deleted_lines: dict[int, tuple[NeuronLoaderRule, str]] = {}
        self.kept_dicts: set[str] = set()  # dicts read by a migrated call and still used elsewhere
        self.methods: dict[int, Load] = {}  # id(method call on a loaded model) -> its load
        self.consumed: set[int] = set()  # id(Name) of every use a migrated call drops
        self._uses: dict[int, tuple[str, set[int]]] = {}  # id(assigned Name) -> (name, id of every use)
        spread_names: dict[int, dict[int, int]] = {}  # id(call) -> id(spread Name) -> id(dict target)
        for call, rule, qname in scan.loads:
            spreads: dict[int, int] = {}
            spread_names[id(call)] = spreads

            def resolve(expr, spreads=spreads):
                target = self.assigned_name(expr)
                if target is None or id(target) not in scan.dicts:
                    return None
                spreads[id(expr)] = id(target)
                return target.value, scan.dicts[id(target)][1]

            reading = read_call(call, resolve)
            migrates = reading is not None and rule.migrates(reading) and not self.is_suppressed(rule, call)
            target = scan.target_of.get(id(call))
            target_code = code_of(target) if target is not None else ""
            self.loads[id(call)] = Load(
                call, rule, reading, migrates, target_code, scan.line_of.get(id(call)), qname
            )
        self._deletions: list[tuple[cst.Name, cst.SimpleStatementLine, NeuronLoaderRule, str]] = []
        for load in list(self.loads.values()):
            load.rule.link(load, self)
        for target, line, rule, message in self._deletions:
            if self.only_read_by(target, self.consumed):
                self.deleted_lines[id(line)] = (rule, message)
        for load in self.loads.values():
            if load.migrates:
                self.consumed.update(spread_names[id(load.call)])
                if load.linked is not None:
                    self.consumed.update(spread_names[id(load.linked.call)])
        for target_id, (name, uses) in self._uses.items():
            if target_id not in scan.dicts:
                continue
            line = scan.dicts[target_id][0]
            read_by = [load for load in self.loads.values() if load.migrates and self._reads(load, name)]
            if not read_by:
                continue
            if uses <= self.consumed:
                removed = f"`{name}` removed: the loading call it fed now passes what it still needs"
                self.deleted_lines[id(line)] = (read_by[0].rule, removed)
            else:
                self.kept_dicts.add(name)
        self._index_methods()
        self.neuron_configs = self._index_neuron_configs()

    def assigned_name(self, expr: cst.BaseExpression) -> cst.Name | None:
        """The target of the one assignment ``expr`` (a name) refers to, when it is a plain
        ``name = value`` line of this file; its uses are noted for :meth:`only_read_by`."""
        if not isinstance(expr, cst.Name) or not self.scan.values:
            return None
        if self._scopes is None:
            self._scopes = self.ctx.wrapper.resolve(ScopeProvider)
        scope = self._scopes.get(expr)
        if scope is None:
            return None
        assignments = [r for access in scope.accesses[expr] if access.node is expr for r in access.referents]
        if len(assignments) != 1:
            return None
        target = getattr(assignments[0], "node", None)
        if id(target) not in self.scan.values:
            return None
        uses = {id(access.node) for access in assignments[0].references}
        self._uses[id(target)] = (target.value, uses)
        return target

    def delete_when_consumed(self, target: cst.Name, line, rule: NeuronLoaderRule, message: str) -> None:
        """Delete ``line`` (which assigns ``target``) if migrated calls consume every use of it."""
        self._deletions.append((target, line, rule, message))

    def only_read_by(self, target: cst.Name, readers: set[int]) -> bool:
        """Whether every use of the variable ``target`` assigns is one of ``readers`` (id of Names)."""
        found = self._uses.get(id(target))
        return found is not None and found[1] <= readers

    def starts_process_group(self) -> bool:
        """Whether the file calls ``torch.distributed.init_process_group`` itself."""
        names = self.ctx.qualified_names
        return any(names(call.func) & INIT_PROCESS_GROUP for call in self.scan.calls if _callee_name(call) == INIT)

    def cpu_tensors(self, name: cst.Name) -> bool:
        """Whether ``name`` is only ever bound to a ``return_tensors="pt"`` result that nothing moves."""
        if not self.scan.tensor_sources:
            return False
        if self._scopes is None:
            self._scopes = self.ctx.wrapper.resolve(ScopeProvider)
        scope = self._scopes.get(name)
        if scope is None:
            return False
        assignments = [r for access in scope.accesses[name] if access.node is name for r in access.referents]
        if len(assignments) != 1 or id(getattr(assignments[0], "node", None)) not in self.scan.tensor_sources:
            return False
        return not any(id(access.node) in self.scan.moved for access in assignments[0].references)

    @staticmethod
    def _reads(load: Load, name: str) -> bool:
        readings = [load.reading, load.linked.reading if load.linked is not None else None]
        return any(reading is not None and name in reading.spreads.values() for reading in readings)

    def is_suppressed(self, rule: NeuronLoaderRule, call: cst.Call) -> bool:
        if not self.ctx.reporter.has_suppressions:
            return False
        span = self.ctx.span(call)
        return self.ctx.reporter.suppresses(rule.meta.id, range(span.line, span.end_line + 1))

    def _index_methods(self) -> None:
        by_target = {load.target: load for load in self.loads.values() if load.target}
        for call in self.scan.method_calls:
            receiver = call.func.value
            if isinstance(receiver, cst.Name):
                load = self._held_by(receiver, by_target.get(receiver.value))
            else:
                load = by_target.get(code_of(receiver))
            if load is not None:
                self.methods[id(call)] = load

    def _held_by(self, name: cst.Name, default: Load | None) -> Load | None:
        """The load whose result ``name`` holds where it is read: that of the last assignment to it
        above, in its own scope (``model`` may hold a stock model before or after); ``default`` when
        no assignment is above (a name the scope reads from outside)."""
        if default is None:
            return None
        if self._scopes is None:
            self._scopes = self.ctx.wrapper.resolve(ScopeProvider)
        scope = self._scopes.get(name)
        line = self.ctx.span(name).line
        above = [
            (self.ctx.span(target).line, value_id)
            for value_id, target in self.scan.target_of.items()
            if isinstance(target, cst.Name) and target.value == name.value and self._scopes.get(target) is scope
            and self.ctx.span(target).line < line
        ]
        if not above:
            return default
        load = self.loads.get(max(above)[1])
        return load if load is not None and load.target == name.value else None

    def _index_neuron_configs(self) -> dict[int, tuple[Load | None, str | None]]:
        """id(``x.neuron_config[.field]``) -> (the migrated load that assigned ``x`` or None, field)."""
        by_target = {load.target: load for load in self.loads.values() if load.target and load.migrates}
        out = {}
        for node, name in self.scan.neuron_configs:
            owner = node.value.value if name is not None else node.value
            out[id(node)] = (by_target.get(code_of(owner)), name)
        return out

    def method_calls(self, load: Load, method: str) -> list[cst.Call]:
        return [c for c in self.scan.method_calls if self.methods.get(id(c)) is load and c.func.attr.value == method]


# ----- what a loading call becomes --------------------------------------------------------------


@dataclass
class Migration:
    """A migrated loading call: its new arguments and what the edit says."""

    args: list[cst.Arg]
    review: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    message: str = ""

    def note(self, legacy: str, target: str, extra: str = "") -> str:
        text = f"{legacy} -> {target}{extra}"
        if self.dropped:
            text += f"; dropped {', '.join(self.dropped)}"
        return text


def shapes_review(shapes: dict[str, str]) -> str:
    """The marker naming the compiled input shapes the caller must now keep by padding."""
    shapes = dict(shapes)
    parts = []
    length = shapes.pop("sequence_length", None)
    if length is not None:
        parts.append(f'pad with padding="max_length", max_length={length}')
    batch = shapes.pop("batch_size", None)
    parts += [f"{name}={value}" for name, value in shapes.items()]
    text = ", ".join(parts)
    if batch is not None:
        text = f"{text} and batch {batch}" if text else f"batch {batch}"
    return f"inputs must keep these shapes: {text}"


@dataclass
class ExportSettings:
    """The Neuron-only keywords of a loading call, sorted by what becomes of them."""

    shapes: dict[str, str] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    export: object = False
    tensor_parallel: Keyword | None = None
    auto_cast: Keyword | None = None
    auto_cast_type: Keyword | None = None
    passed: dict[str, Keyword] = field(default_factory=dict)  # the other keywords

    @classmethod
    def read(cls, reading: Reading) -> ExportSettings:
        settings = cls()
        for name, keyword in reading.keywords.items():
            if name == "n_positions":
                settings.shapes.setdefault("sequence_length", keyword.code)
                settings.dropped.append(name)
            elif name in INPUT_SHAPES:
                settings.shapes[name] = keyword.code
                settings.dropped.append(name)
            elif name == "export":
                settings.export = keyword.literal()
                settings.dropped.append(f"export ({EXPORT_ONLY['export']})")
            elif name in EXPORT_ONLY:
                settings.dropped.append(f"{name} ({EXPORT_ONLY[name]})")
            elif name in TENSOR_PARALLEL:
                if settings.tensor_parallel is None or name == "tensor_parallel_size":
                    settings.tensor_parallel = keyword
            elif name == "auto_cast":
                settings.auto_cast = keyword
            elif name == "auto_cast_type":
                settings.auto_cast_type = keyword
            else:
                settings.passed[name] = keyword
        return settings

    def cast_dtype(self, gated: bool, default_cast=None, default_type: str | None = None) -> tuple[str | None, str]:
        """The torch dtype name the cast settings ask for, and a review note ("" = none needed).

        ``gated``: auto_cast_type applied only with auto_cast on (traced encoders and pipelines, whose
        defaults are ``default_cast``/``default_type``); otherwise it is the weights' dtype (decoders)."""
        cast = self.auto_cast.literal() if self.auto_cast is not None else default_cast
        if gated and cast in NO_AUTO_CAST:
            return None, ""
        if self.auto_cast_type is not None:
            kind = self.auto_cast_type.literal()
        else:
            kind = (default_type or "bf16") if gated else None
        if kind is None:
            return None, ""
        if kind is UNKNOWN:
            return None, f"set dtype= to the torch dtype auto_cast_type={self.auto_cast_type.code} names"
        dtype = CAST_TYPES.get(kind)
        if dtype is None:
            return None, f"auto_cast_type={kind!r} has no load-time setting: the model stays float32"
        if gated and cast != "all":
            return dtype, f"weights now load in torch.{dtype} (auto_cast cast only matmuls): check accuracy"
        return dtype, ""

    def checkpoint_review(self, model: cst.BaseExpression | None = None) -> str:
        """The note that a load without export=True must name the original checkpoint ("" when it
        exports, or names an aws-neuron repository: NM309 marks that one with its source model)."""
        repository = literal(model, single_token=True) if model is not None else None
        if self.export is True or (isinstance(repository, str) and repository.startswith(PRECOMPILED_ORG)):
            return ""
        return "this must be the original checkpoint: a Neuron-compiled one (*.neuron files) cannot be loaded"


def model_argument(call: cst.Call, reading: Reading) -> cst.BaseExpression | None:
    """The model id a loading call names: its first positional argument, or the keyword for it."""
    if reading.positional:
        return call.args[reading.positional[0]].value
    for name in ("pretrained_model_name_or_path", "model_id", "model_name_or_path", "model"):
        if name in reading.keywords and not reading.keywords[name].source:
            return reading.keywords[name].value
    return None


def tensor_parallel_size(keyword: Keyword | None):
    """The core count as an int (1 when absent), or the keyword itself when it is not a literal."""
    if keyword is None:
        return 1
    value = keyword.literal()
    if value is None:
        return 1
    return value if isinstance(value, int) else keyword


def torchrun_review(cores) -> str:
    count = cores.code if isinstance(cores, Keyword) else cores
    text = f"tensor parallel over {count} NeuronCores: launch with torchrun --nproc-per-node {count}"
    if isinstance(cores, Keyword):
        text += '; with one core use device_map="neuron" instead'
    return text


def unresolved_review(call: cst.Call, reading: Reading) -> str:
    if not reading.unresolved:
        return ""
    spreads = ", ".join(f"`**{code_of(call.args[i].value)}`" for i in reading.unresolved)
    return f"{spreads} must no longer pass {NEURON_SPREAD_KEYS}"


FLASH_REVIEW = (
    "flash_attention_2 was optimum-neuron's NKI kernel; in stock transformers it is the CUDA flash-attn package: "
    f'"{hf.NEURON_ATTENTION}" is the stock path on neuron, check speed'
)


def stock_loading_args(args: list[cst.Arg]) -> tuple[list[cst.Arg], list[str], str]:
    """The arguments of a stock ``from_pretrained`` without the keywords transformers 5 rejects:
    old names renamed, removed switches dropped, flash attention asked for as ``"sdpa"``.
    Returns (arguments, what was dropped and why, review note or "")."""
    names = {arg.keyword.value for arg in args if arg.keyword}
    out, dropped, review = [], [], ""
    sdpa = cst.SimpleString(f'"{hf.NEURON_ATTENTION}"')
    for arg in args:
        name = arg.keyword.value if arg.keyword else None
        if name in hf.FROM_PRETRAINED_REMOVED:
            dropped.append(f"{name} ({hf.FROM_PRETRAINED_REMOVED[name]})")
            continue
        if name in hf.FROM_PRETRAINED_RENAMED and hf.FROM_PRETRAINED_RENAMED[name] not in names:
            arg = keyword_arg(arg, hf.FROM_PRETRAINED_RENAMED[name])
        elif name == hf.FLASH_ATTENTION_FLAG:
            wanted = literal(arg.value, single_token=True)
            if wanted is False or "attn_implementation" in names:
                dropped.append(f"{name} (removed in transformers 5; attn_implementation chooses the kernel)")
                continue
            if wanted is not True:
                review = f"`{name}={code_of(arg.value).strip()}` became attn_implementation=\"{hf.NEURON_ATTENTION}\""
                review += f" either way (transformers 5 removed the switch); {FLASH_REVIEW}"
            else:
                review = FLASH_REVIEW
            arg = arg.with_changes(keyword=cst.Name("attn_implementation"), value=sdpa)
        elif name == "attn_implementation" and literal(arg.value, single_token=True) == hf.FLASH_ATTENTION:
            arg = arg.with_changes(value=sdpa)
            review = FLASH_REVIEW
        out.append(arg)
    return out, dropped, review


# ----- where a class name is used ---------------------------------------------------------------

BASE, ANNOTATION, ISINSTANCE, OTHER = "base", "annotation", "isinstance", "other"


class NeuronLoaderRule(Rule):
    """Shared by the rules that migrate calls loading a Neuron model or pipeline.

    Each active rule lists its loading calls in ``loads`` (qname -> handler name); the file's
    :class:`LoaderIndex` reads them all once. The class also tracks where a class name stands
    (a base class, an annotation, an isinstance check) for the reference handlers.
    """

    loads: dict[str, str] = {}
    max_positional = 1
    # Keywords that make a loading call a manual site.
    manual_keywords: frozenset[str] = frozenset()

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.contexts: dict[int, str] = {}
        self.annotation_depth = 0
        # id(original line) -> (statements to add before it, after it, what they do): set by a call handler,
        # added when the line is left so that the line keeps every other rule's edits.
        self.follow_ups: dict[int, tuple[str, str, str]] = {}

    def visit_Module(self, node: cst.Module) -> None:
        registry = self.ctx.fact(LOADER_REGISTRY)
        for qname in self.loads:
            # An imported name's qualified name starts with a module the file spells out: a file that
            # never names the package has no such load, and no loader index to build.
            if qname.split(".")[0] in self.ctx.text:
                registry.setdefault(qname, self)

    def index(self) -> LoaderIndex:
        return self.ctx.fact(LOADER_INDEX)

    def load_of(self, original: cst.Call) -> Load:
        return self.index().loads[id(original)]

    def migrates(self, reading: Reading) -> bool:
        return len(reading.positional) <= self.max_positional and not (set(reading.keywords) & self.manual_keywords)

    def link(self, load: Load, index: LoaderIndex) -> None:
        """Called once every loading call of the file is read: a rule whose loads take settings from
        another call (an export from its get_neuron_config) connects them here."""

    def follow_with(self, load: Load, statement: str, why: str, *, before: str = "") -> None:
        """Add ``statement`` after the line ``load`` is the value of (and ``before`` ahead of it)."""
        self.follow_ups[id(load.line)] = (before, statement, why)

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        """Add the statements a migrated load needs around its line, or delete an assignment whose
        value only fed migrated loading calls (a literal dict they now spell out, a neuron config)."""
        if id(original) in self.follow_ups:
            before, after, why = self.follow_ups.pop(id(original))
            # The engine gives the first statement the line's own comments and the last its trailing one.
            line = updated.with_changes(leading_lines=[], trailing_whitespace=cst.TrailingWhitespace())
            statements = [*self.ctx.statements(before), line, *self.ctx.statements(after)]
            return Edit(StatementReplacement(statements), message=why, safe=True)
        if not self.ctx.fact(LOADER_REGISTRY):
            return updated
        owner = self.index().deleted_lines.get(id(original))
        if owner is None or owner[0] is not self:
            return updated
        return Edit(StatementReplacement([]), message=owner[1], safe=True)

    def spread_note(self, reading: Reading) -> str:
        kept = sorted(set(reading.spreads.values()) & self.index().kept_dicts)
        if not kept:
            return ""
        names = ", ".join(f"`{name}`" for name in kept)
        return f"; {names} is still read elsewhere: its keys are no longer passed here"

    # ----- reference contexts -----
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        for base in node.bases:
            self.contexts[id(base.value)] = BASE

    def visit_Annotation(self, node: cst.Annotation) -> None:
        self.annotation_depth += 1

    def leave_Annotation(self, original: cst.Annotation, updated: cst.Annotation) -> cst.Annotation:
        self.annotation_depth -= 1
        return updated

    def visit_Call(self, node: cst.Call) -> None:
        if not (isinstance(node.func, cst.Name) and node.func.value in ("isinstance", "issubclass")):
            return
        if len(node.args) == 2:
            classes = node.args[1].value
            self.contexts[id(classes)] = ISINSTANCE
            if isinstance(classes, cst.Tuple):
                self.contexts.update((id(element.value), ISINSTANCE) for element in classes.elements)

    def context_of(self, node: cst.CSTNode) -> str:
        if self.annotation_depth:
            return ANNOTATION
        return self.contexts.get(id(node), OTHER)

    def transformers_name(self, name: str) -> cst.BaseExpression:
        return self.ctx.expr(self.ctx.require_from_import("transformers", name))

    def rename_class(self, original, updated, legacy: str, module: str, target: str, load: str):
        """A class name with a same-shaped stock replacement: renamed in annotations and isinstance
        checks, renamed and reviewed as a base class; any other use (a variable that is later
        loaded with Neuron arguments) is left to a human, told to ``load`` instead."""
        context = self.context_of(original)
        if context == OTHER:
            self.ctx.manual(
                self.meta, original, f"use `{target}` and load with `{load}`, without the Neuron export arguments"
            )
            return updated
        stock = self.ctx.expr(self.ctx.require_from_import(module, target))
        if context == BASE:
            review = f"{legacy} was a compiled Neuron class; check the overridden methods still apply"
            return Edit(stock, message=f"{legacy} -> {target}", review=review)
        return Edit(stock, message=f"{legacy} -> {target}", safe=True)


class TransformersModelRule(NeuronLoaderRule):
    """A Neuron model class -> a transformers class: ``from_pretrained`` calls and the class name."""

    # legacy class qname -> transformers class name
    targets: dict[str, str] = {}
    # cast settings apply only with auto_cast on (traced encoders), or are the weights' dtype (decoders)
    gated_cast = True

    def target_of(self, qname: str) -> tuple[str, str]:
        """(legacy class name, transformers class) for a qname of the class or of one of its methods."""
        for legacy, target in self.targets.items():
            if qname == legacy or qname.startswith(legacy + "."):
                return legacy.rsplit(".", 1)[1], target
        raise KeyError(qname)

    def migrate_load(self, original: cst.Call, updated: cst.Call, qname: str) -> tuple[cst.Call, Migration] | None:
        """The transformers ``from_pretrained`` call for a legacy one (None: left to a human)."""
        legacy, target = self.target_of(qname)
        load = self.load_of(original)
        if not load.migrates:
            self.ctx.manual(
                self.meta,
                original,
                f'load with `{target}.from_pretrained(checkpoint, device_map="neuron")`, without the Neuron export '
                "arguments",
            )
            return None
        reading = load.reading
        settings = ExportSettings.read(reading)
        migration = Migration(args=[])
        migration.dropped = list(settings.dropped)
        passed = settings.passed
        leading: list[cst.Arg] = []
        if load.linked is not None:
            # An export: its settings came from get_neuron_config, and its model id may be a keyword.
            settings.export = True
            if "model_id" in passed:
                del passed["model_id"]
                leading = [cst.Arg(a.value) for a in updated.args if a.keyword and a.keyword.value == "model_id"]
        extra: list[cst.Arg] = []
        if "dtype" not in passed and "torch_dtype" not in passed:
            dtype, review = settings.cast_dtype(self.gated_cast)
            if dtype is not None:
                extra.append(new_keyword("dtype", f"{self.ctx.require_import('torch')}.{dtype}"))
            if review:
                migration.review.append(review)
        for keyword in (settings.auto_cast, settings.auto_cast_type):
            if keyword is not None:
                migration.dropped.append(f"{keyword.name} (dtype= sets the precision)")
        cores = tensor_parallel_size(settings.tensor_parallel)
        if cores == 1:
            if settings.tensor_parallel is not None:
                migration.dropped.append(f"{settings.tensor_parallel.name} (one NeuronCore)")
            if "device_map" not in passed:
                extra.append(new_keyword("device_map", '"neuron"'))
        else:
            config = self.ctx.require_from_import("transformers.distributed", "DistributedConfig")
            size = cores.code if isinstance(cores, Keyword) else str(cores)
            extra.append(new_keyword("distributed_config", f"{config}(tp_size={size})"))
            migration.dropped.append(f"{settings.tensor_parallel.name} (now DistributedConfig tp_size)")
            migration.review.append(torchrun_review(cores))
        for review in (self.shapes_review(settings.shapes), unresolved_review(original, reading)):
            migration.review += [review] if review else []
        checkpoint = settings.checkpoint_review(model_argument(original, reading))
        migration.review += [checkpoint] if checkpoint else []

        def rename(keyword: Keyword) -> str | None:
            if keyword.name not in passed:
                return None
            return RENAMED.get(keyword.name, keyword.name)

        migration.args, dropped, attention = stock_loading_args(leading + reading.rebuilt(updated, rename) + extra)
        migration.dropped += dropped
        migration.review += [attention] if attention else []
        cls = self.ctx.require_from_import("transformers", target)
        new = with_args(updated.with_changes(func=self.ctx.expr(f"{cls}.from_pretrained")), migration.args)
        migration.message = migration.note(legacy, target, ' on device "neuron"' + self.spread_note(reading))
        return new, migration

    def shapes_review(self, shapes: dict[str, str]) -> str:
        return shapes_review(shapes) if shapes else ""

    # ----- the class name used elsewhere -----
    def constructor(self, original: cst.Call, updated: cst.Call, qname: str):
        _, target = self.target_of(qname)
        self.ctx.manual(
            self.meta,
            original,
            f'the constructor took a compiled TorchScript module; load with `{target}.from_pretrained(checkpoint, '
            'device_map="neuron")`',
        )
        return updated

    def reference(self, original: cst.CSTNode, updated: cst.CSTNode, qname: str):
        legacy, target = self.target_of(qname)
        load = f'{target}.from_pretrained(checkpoint, device_map="neuron")'
        if not target.startswith("AutoModel"):
            return self.rename_class(original, updated, legacy, "transformers", target, load)
        # An Auto class is a factory: type checks name the common base class instead.
        context = self.context_of(original)
        if context in (BASE, OTHER):
            if context == BASE:
                self.ctx.manual(self.meta, original, f"{target} is a factory; subclass the concrete model class")
            else:
                self.ctx.manual(
                self.meta, original, f"use `{target}` and load with `{load}`, without the Neuron export arguments"
            )
            return updated
        base = self.transformers_name("PreTrainedModel")
        message = f"{legacy} -> PreTrainedModel ({target} loads it)"
        if context == ISINSTANCE:
            review = f"any transformers model matches PreTrainedModel; {legacy} matched only this task"
            return Edit(base, message=message, review=review)
        return Edit(base, message=message, safe=True)


def _class_calls(targets: dict[str, str], **methods: str) -> dict[str, str]:
    """Call table for classes: ``Class(...)`` -> ``constructor``, ``Class.<method>(...)`` -> handler."""
    table = dict.fromkeys(targets, "constructor")
    for method, handler in methods.items():
        table.update(dict.fromkeys(with_methods(tuple(targets), method), handler))
    return table


STATIC_CACHE = 'cache_implementation="static"'
VLLM = "for serving use vLLM's Neuron backend"


def _accepts_static_cache(call: cst.Call) -> bool:
    """A generate() call the keyword can be added to: no ``**kwargs`` (it could carry one too) and no
    cache of its own."""
    for arg in call.args:
        if arg.star == "**" or (arg.keyword is not None and arg.keyword.value == "past_key_values"):
            return False
    return True


# SentenceTransformer keeps these loading arguments (under its own names); the rest go.
SENTENCE_TRANSFORMER_KEYWORDS = {
    "revision": "revision",
    "token": "token",
    "use_auth_token": "token",
    "trust_remote_code": "trust_remote_code",
    "local_files_only": "local_files_only",
    "cache_dir": "cache_folder",
}
# optimum's pipeline() before its **kwargs, in order.
PIPELINE_PARAMS = (
    "task",
    "model",
    "tokenizer",
    "feature_extractor",
    "image_processor",
    "use_fast",
    "export",
    "input_shapes",
    "compiler_args",
    "token",
    "revision",
    "trust_remote_code",
)
PIPELINE_POSITIONAL_KEPT = 2  # task and model keep their places in transformers.pipeline
# Keyword arguments of a forward / generate call that carry the tokenizer's tensors.
TENSOR_KEYWORDS = frozenset(
    {"input_ids", "attention_mask", "token_type_ids", "position_ids", "pixel_values", "input_features", "inputs"}
)


def _inner_attr(node: cst.Attribute) -> str:
    return node.value.attr.value if isinstance(node.value, cst.Attribute) else ""
