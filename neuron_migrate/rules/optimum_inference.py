"""optimum-neuron inference: compiled Neuron models and pipelines -> stock Transformers on "neuron".

optimum-neuron exported a model ahead of time for fixed input shapes (``export=True, batch_size=1,
sequence_length=128``) and then ran the compiled artifact. On TorchNeuron the stock Transformers class
loads the original checkpoint onto the device (``device_map="neuron"``) and compiles as it runs, so
the export settings go: the input shapes become a promise the caller keeps by padding, the cast
settings become the load ``dtype``, and a core count becomes tensor parallelism over torchrun ranks
(``DistributedConfig``). Transformers, Diffusers and PEFT run natively on TorchNeuron (Neuron docs,
TorchNeuron resources); the class and keyword tables follow the optimum-neuron 0.4.5 sources.

A ``**settings`` spread whose dict is a literal assigned in the file is read as if its keys were
written in the call; the dict assignment goes when nothing else reads it. ``optimum_diffusers``
builds on the same reading for the diffusion pipelines.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import ScopeProvider

from neuron_migrate.migrate.context import FileContext, code_of, suppressed_lines
from neuron_migrate.migrate.imports import is_shim
from neuron_migrate.rules import hf_fields as hf
from neuron_migrate.rules.base import MANUAL, REVIEW, SAFE, Example, Rule, RuleMeta, StatementReplacement, register
from neuron_migrate.rules.calls import UNKNOWN, keyword_arg, literal, new_keyword
from neuron_migrate.rules.optimum_names import optimum_names, with_methods
from neuron_migrate.rules.tables.optimum_inference import ROWS
from neuron_migrate.rules.xla_step import with_args

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

LOADER_REGISTRY = "optimum_loaders"  # ctx.facts key: qname of a loading call -> the active rule handling it
LOADER_INDEX = "optimum_loader_index"
# Methods of a loaded model that these rules look at.
WATCHED_METHODS = ("generate", "save_pretrained", "push_to_hub")
NEURON_CONFIG = "neuron_config"  # the compiled model's export settings


class _LoaderScan(cst.CSTVisitor):
    """The loading calls of the file, the literal dicts assigned to a name, and method calls on names."""

    def __init__(self, ctx: FileContext, loaders: dict[str, NeuronLoaderRule]) -> None:
        super().__init__()
        self.ctx = ctx
        self.loaders = loaders
        self.shim_depth = 0
        self.loads: list[tuple[cst.Call, NeuronLoaderRule]] = []
        self.line_of: dict[int, cst.SimpleStatementLine] = {}  # id(call that is a line's whole value) -> line
        self.target_of: dict[int, cst.BaseExpression] = {}  # id(assigned call) -> its single target
        self.dicts: dict[int, tuple[cst.SimpleStatementLine, dict]] = {}  # id(target Name) -> (line, pairs)
        self.method_calls: list[cst.Call] = []
        # ``x.neuron_config.field`` (field) and bare ``x.neuron_config`` (None), outermost node first
        self.neuron_configs: list[tuple[cst.Attribute, str | None]] = []
        self._inner_configs: set[int] = set()
        self.calls: list[cst.Call] = []  # every call of the file (outside shims)
        self.tensor_sources: set[int] = set()  # id(target Name) of ``x = f(..., return_tensors="pt")``
        self.moved: set[int] = set()  # id(Name) of every ``x.to``

    def on_visit(self, node: cst.CSTNode) -> bool:
        if is_shim(node, self.ctx.legacy_prefixes):
            self.shim_depth += 1
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        super().on_leave(original_node)
        if is_shim(original_node, self.ctx.legacy_prefixes):
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
                self.loads.append((node, rule))
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
        self._suppressed = suppressed_lines(ctx.text)
        self.loads: dict[int, Load] = {}
        self.deleted_dicts: dict[int, tuple[NeuronLoaderRule, str]] = {}  # id(dict line) -> (rule, name)
        self.kept_dicts: set[str] = set()  # dicts read by a migrated call and still used elsewhere
        self.methods: dict[int, Load] = {}  # id(method call on a loaded model) -> its load
        consumed: set[int] = set()  # id(Name) of spreads a migrated call drops
        dict_uses: dict[int, tuple[str, set[int]]] = {}  # id(dict target) -> (name, id of every use)
        for call, rule in scan.loads:
            spreads: dict[int, int] = {}  # id(spread Name) -> id(dict target)

            def resolve(expr, spreads=spreads):
                target = self._literal_dict(expr, dict_uses)
                if target is None:
                    return None
                spreads[id(expr)] = id(target)
                return target.value, scan.dicts[id(target)][1]

            reading = read_call(call, resolve)
            migrates = reading is not None and rule.migrates(reading) and not self._is_suppressed(rule, call)
            target = scan.target_of.get(id(call))
            target_code = code_of(target) if target is not None else ""
            load = Load(call, rule, reading, migrates, target_code, scan.line_of.get(id(call)))
            self.loads[id(call)] = load
            if migrates:
                consumed.update(spreads)
        for target_id, (name, uses) in dict_uses.items():
            line = scan.dicts[target_id][0]
            read_by = [load for load in self.loads.values() if load.migrates and self._reads(load, name)]
            if not read_by:
                continue
            if uses <= consumed:
                self.deleted_dicts[id(line)] = (read_by[0].rule, name)
            else:
                self.kept_dicts.add(name)
        self._index_methods()
        self.neuron_configs = self._index_neuron_configs()

    def _literal_dict(self, expr: cst.BaseExpression, dict_uses) -> cst.Name | None:
        """The target of the one literal-dict assignment ``expr`` (a name) refers to, if it is one."""
        if not isinstance(expr, cst.Name) or not self.scan.dicts:
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
        if id(target) not in self.scan.dicts:
            return None
        uses = {id(access.node) for access in assignments[0].references}
        dict_uses[id(target)] = (target.value, uses)
        return target

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
        return load.reading is not None and name in load.reading.spreads.values()

    def _is_suppressed(self, rule: NeuronLoaderRule, call: cst.Call) -> bool:
        if not self._suppressed:
            return False
        span = self.ctx.span(call)
        for line in range(span.line, span.end_line + 1):
            ids = self._suppressed.get(line, frozenset())
            if ids is None or rule.meta.id in ids:
                return True
        return False

    def _index_methods(self) -> None:
        by_target = {load.target: load for load in self.loads.values() if load.target}
        for call in self.scan.method_calls:
            load = by_target.get(code_of(call.func.value))
            if load is not None:
                self.methods[id(call)] = load

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

    def checkpoint_review(self) -> str:
        if self.export is True:
            return ""
        return "this must be the original checkpoint: a Neuron-compiled one (*.neuron files) cannot be loaded"


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
        # id(original line) -> (statement to add after it, what it does): set by a call handler,
        # added when the line is left so that the line keeps every other rule's edits.
        self.follow_ups: dict[int, tuple[str, str]] = {}

    def visit_Module(self, node: cst.Module) -> None:
        registry = self.ctx.facts.setdefault(LOADER_REGISTRY, {})
        for qname in self.loads:
            # An imported name's qualified name starts with a module the file spells out: a file that
            # never names the package has no such load, and no loader index to build.
            if qname.split(".")[0] in self.ctx.text:
                registry.setdefault(qname, self)

    def index(self) -> LoaderIndex:
        if LOADER_INDEX not in self.ctx.facts:
            self.ctx.facts[LOADER_INDEX] = LoaderIndex(self.ctx, self.ctx.facts.get(LOADER_REGISTRY, {}))
        return self.ctx.facts[LOADER_INDEX]  # type: ignore[return-value]

    def load_of(self, original: cst.Call) -> Load:
        return self.index().loads[id(original)]

    def migrates(self, reading: Reading) -> bool:
        return len(reading.positional) <= self.max_positional and not (set(reading.keywords) & self.manual_keywords)

    def follow_with(self, load: Load, statement: str, why: str) -> None:
        """Add ``statement`` after the line ``load`` is the value of."""
        self.follow_ups[id(load.line)] = (statement, why)

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        """Add a follow-up statement after a migrated load, or delete a literal dict assignment whose
        keys the migrated loading calls now spell out."""
        if id(original) in self.follow_ups:
            statement, why = self.follow_ups.pop(id(original))
            self.ctx.confirm_safe()
            self.ctx.note(why)
            # The engine gives the first statement the line's own comments and the last its trailing one.
            first = updated.with_changes(leading_lines=[], trailing_whitespace=cst.TrailingWhitespace())
            return StatementReplacement([first, *self.ctx.statements(statement)])
        if not self.ctx.facts.get(LOADER_REGISTRY):
            return updated
        owner = self.index().deleted_dicts.get(id(original))
        if owner is None or owner[0] is not self:
            return updated
        self.ctx.confirm_safe()
        self.ctx.note(f"`{owner[1]}` removed: the loading call it fed now passes what it still needs")
        return StatementReplacement([])

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
            self.ctx.manual(original, f"use `{target}` and load with `{load}`, without the Neuron export arguments")
            return updated
        if context == BASE:
            self.ctx.review(f"{legacy} was a compiled Neuron class; check the overridden methods still apply")
        else:
            self.ctx.confirm_safe()
        self.ctx.note(f"{legacy} -> {target}")
        return self.ctx.expr(self.ctx.require_from_import(module, target))


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
        if settings.checkpoint_review():
            migration.review.append(settings.checkpoint_review())

        def rename(keyword: Keyword) -> str | None:
            if keyword.name not in passed:
                return None
            return RENAMED.get(keyword.name, keyword.name)

        migration.args, dropped, attention = stock_loading_args(reading.rebuilt(updated, rename) + extra)
        migration.dropped += dropped
        migration.review += [attention] if attention else []
        cls = self.ctx.require_from_import("transformers", target)
        new = with_args(updated.with_changes(func=self.ctx.expr(f"{cls}.from_pretrained")), migration.args)
        self.ctx.note(migration.note(legacy, target, ' on device "neuron"' + self.spread_note(reading)))
        return new, migration

    def shapes_review(self, shapes: dict[str, str]) -> str:
        return shapes_review(shapes) if shapes else ""

    # ----- the class name used elsewhere -----
    def constructor(self, original: cst.Call, updated: cst.Call, qname: str):
        _, target = self.target_of(qname)
        self.ctx.manual(
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
                self.ctx.manual(original, f"{target} is a factory; subclass the concrete model class")
            else:
                self.ctx.manual(original, f"use `{target}` and load with `{load}`, without the Neuron export arguments")
            return updated
        if context == ISINSTANCE:
            self.ctx.review(f"any transformers model matches PreTrainedModel; {legacy} matched only this task")
        else:
            self.ctx.confirm_safe()
        self.ctx.note(f"{legacy} -> PreTrainedModel ({target} loads it)")
        return self.transformers_name("PreTrainedModel")


def _class_calls(targets: dict[str, str], **methods: str) -> dict[str, str]:
    """Call table for classes: ``Class(...)`` -> ``constructor``, ``Class.<method>(...)`` -> handler."""
    table = dict.fromkeys(targets, "constructor")
    for method, handler in methods.items():
        table.update(dict.fromkeys(with_methods(tuple(targets), method), handler))
    return table


@register
class TaskModelToTransformers(TransformersModelRule):
    """``NeuronModelFor<Task>`` and the model-specific ``NeuronBert*``/``NeuronCLIP*``/... -> the
    transformers ``AutoModelFor<Task>`` / model class, loaded on ``device_map="neuron"`` (TorchNeuron
    runs stock Transformers: Neuron docs, TorchNeuron resources)."""

    meta = RuleMeta(
        "NM301",
        "NeuronModelFor<Task>.from_pretrained -> AutoModelFor<Task>.from_pretrained(device_map=\"neuron\")",
        safety=REVIEW,
        risks=frozenset({"numerics", "performance", "checkpoint-format"}),
        summary=(
            "The stock transformers class loads the original checkpoint on the neuron device and compiles as it "
            "runs. export= and compiler flags are dropped; auto_cast_type becomes dtype=; num_cores / "
            "tensor_parallel_size becomes DistributedConfig(tp_size=N); the compiled input shapes become a "
            "padding promise named in the marker."
        ),
        docs=(DOCS_HF_NATIVE, DOCS_WHAT_CHANGES, DOCS_STATIC_SHAPES),
        triggers=OPTIMUM_TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron import NeuronModelForSequenceClassification\n\n"
                "model = NeuronModelForSequenceClassification.from_pretrained(\n"
                '    "distilbert-base-uncased-finetuned-sst-2-english",\n'
                "    export=True,\n"
                "    batch_size=1,\n"
                "    sequence_length=128,\n"
                '    auto_cast="matmul",\n'
                '    auto_cast_type="bf16",\n'
                ")\n"
            ),
            after=(
                "import torch\n"
                "from transformers import AutoModelForSequenceClassification\n\n"
                "# neuron-migrate(NM301): weights now load in torch.bfloat16 (auto_cast cast only matmuls): check "
                'accuracy; inputs must keep these shapes: pad with padding="max_length", max_length=128 and batch 1\n'
                "model = AutoModelForSequenceClassification.from_pretrained(\n"
                '    "distilbert-base-uncased-finetuned-sst-2-english",\n'
                "    dtype=torch.bfloat16,\n"
                '    device_map="neuron",\n'
                ")\n"
            ),
        ),
    )
    targets = TASK_MODEL_TARGETS
    loads = dict.fromkeys(with_methods(tuple(TASK_MODEL_TARGETS), "from_pretrained"), "load")
    calls = {**_class_calls(TASK_MODEL_TARGETS), **loads}
    references = dict.fromkeys(TASK_MODEL_TARGETS, "reference")

    def load(self, original: cst.Call, updated: cst.Call, qname: str):
        migrated = self.migrate_load(original, updated, qname)
        if migrated is None:
            return updated
        new, migration = migrated
        self.ctx.review("; ".join(migration.review) or 'pad inputs to fixed shapes (padding="max_length")')
        return new


STATIC_CACHE = 'cache_implementation="static"'
VLLM = "for serving use vLLM's Neuron backend"


@register
class CausalLMToTransformers(TransformersModelRule):
    """``NeuronModelForCausalLM`` -> ``AutoModelForCausalLM`` on ``device_map="neuron"`` with a static
    KV cache, so ``generate`` runs fixed shapes (transformers static-cache guide; Neuron HF inference
    tutorial). Serving moves to vLLM's Neuron backend (XLA inference is unsupported on Trn2/Trn3)."""

    meta = RuleMeta(
        "NM302",
        "NeuronModelForCausalLM -> AutoModelForCausalLM with a static KV cache",
        safety=REVIEW,
        risks=frozenset({"performance", "checkpoint-format"}),
        summary=(
            "Loads the original checkpoint with AutoModelForCausalLM on the neuron device; generate() gets "
            'cache_implementation="static" (or the model\'s generation_config does). batch_size/sequence_length '
            "become limits named in the marker; num_cores / tensor_parallel_size becomes DistributedConfig. "
            "get_neuron_config()/export() are left for a human with the code to write."
        ),
        docs=(DOCS_STATIC_CACHE, DOCS_HF_INFERENCE, DOCS_NO_XLA_INFERENCE),
        triggers=OPTIMUM_TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron import NeuronModelForCausalLM\n\n"
                "model = NeuronModelForCausalLM.from_pretrained(\n"
                '    "meta-llama/Llama-3.2-1B", export=True, batch_size=1, sequence_length=4096, num_cores=2,\n'
                '    auto_cast_type="bf16",\n'
                ")\n"
                "tokens = model.generate(input_ids, max_new_tokens=64)\n"
            ),
            after=(
                "import torch\n"
                "from transformers import AutoModelForCausalLM\n"
                "from transformers.distributed import DistributedConfig\n\n"
                "# neuron-migrate(NM302): tensor parallel over 2 NeuronCores: launch with torchrun --nproc-per-node "
                "2; static KV cache: keep batch 1 and prompt + new tokens within 4096; for serving use vLLM's "
                "Neuron backend\n"
                "model = AutoModelForCausalLM.from_pretrained(\n"
                '    "meta-llama/Llama-3.2-1B", dtype=torch.bfloat16, '
                "distributed_config=DistributedConfig(tp_size=2),\n"
                ")\n"
                'tokens = model.generate(input_ids, max_new_tokens=64, cache_implementation="static")\n'
            ),
        ),
    )
    targets = dict.fromkeys(CAUSAL_LM, "AutoModelForCausalLM")
    gated_cast = False
    loads = dict.fromkeys(with_methods(CAUSAL_LM, "from_pretrained"), "load")
    calls = {
        **_class_calls(targets, get_neuron_config="ahead_of_time", export="ahead_of_time"),
        **loads,
    }
    references = dict.fromkeys(CAUSAL_LM, "reference")

    def shapes_review(self, shapes: dict[str, str]) -> str:
        limits = []
        if "batch_size" in shapes:
            limits.append(f"batch {shapes['batch_size']}")
        if "sequence_length" in shapes:
            limits.append(f"prompt + new tokens within {shapes['sequence_length']}")
        return f"static KV cache: keep {' and '.join(limits)}" if limits else ""

    def load(self, original: cst.Call, updated: cst.Call, qname: str):
        migrated = self.migrate_load(original, updated, qname)
        if migrated is None:
            return updated
        new, migration = migrated
        load = self.load_of(original)
        plan = self.static_cache_plan(load)
        review = migration.review
        if plan == "none":
            review.append(f"generate with {STATIC_CACHE}")
        self.ctx.review("; ".join([*review, VLLM]))
        if plan == "config":
            setting = f'{load.target}.generation_config.cache_implementation = "static"\n'
            self.follow_with(load, setting, "generate() uses a static KV cache: fixed shapes, one graph per length")
        return new

    def static_cache_plan(self, load: Load) -> str:
        """"generate": add the keyword to the model's generate() calls; "config": set it on the
        model's generation_config after the load; "none": neither can be done here."""
        sites = self.index().method_calls(load, "generate")
        if sites and all(_accepts_static_cache(site) for site in sites):
            return "generate"
        if load.line is not None and load.target:
            return "config"
        return "none"

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        if not self.ctx.facts.get(LOADER_REGISTRY) or not isinstance(original.func, cst.Attribute):
            return updated
        if original.func.attr.value != "generate":
            return updated
        load = self.index().methods.get(id(original))
        if load is None or load.rule is not self or not load.migrates or self.static_cache_plan(load) != "generate":
            return updated
        if any(arg.keyword is not None and arg.keyword.value == "cache_implementation" for arg in original.args):
            return updated
        self.ctx.confirm_safe()
        self.ctx.note("generate() uses a static KV cache: fixed shapes, one compiled graph per length")
        return with_args(updated, [*updated.args, new_keyword("cache_implementation", '"static"')])

    def ahead_of_time(self, original: cst.Call, updated: cst.Call, qname: str):
        model_id = code_of(original.args[0].value) if original.args and not original.args[0].star else "model_id"
        self.ctx.manual(
            original,
            "nothing is exported ahead of time now: load with `AutoModelForCausalLM.from_pretrained("
            f'{model_id}, dtype=torch.bfloat16, device_map="neuron")` and generate with {STATIC_CACHE}',
            fix=(
                f'model = AutoModelForCausalLM.from_pretrained({model_id}, dtype=torch.bfloat16, device_map="neuron")\n'
                'model.generation_config.cache_implementation = "static"'
            ),
        )
        return updated


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


@register
class SentenceTransformersToStock(NeuronLoaderRule):
    """``NeuronSentenceTransformers`` (``NeuronModelForSentenceTransformers`` up to 0.3) ->
    ``sentence_transformers.SentenceTransformer(model_id, device="neuron")``; ``NeuronModelForEmbedding``
    has no one-line counterpart (pooling differs per model) and is left to a human."""

    meta = RuleMeta(
        "NM303",
        'NeuronSentenceTransformers -> SentenceTransformer(model_id, device="neuron")',
        safety=REVIEW,
        risks=frozenset({"numerics", "performance", "checkpoint-format"}),
        summary=(
            "sentence-transformers loads the original model on the neuron device; export settings are dropped "
            "and the compiled shapes become a marker (encode() pads each batch to its longest text)."
        ),
        docs=(DOCS_SENTENCE_TRANSFORMERS, DOCS_HF_NATIVE),
        triggers=OPTIMUM_TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron import NeuronSentenceTransformers\n\n"
                "model = NeuronSentenceTransformers.from_pretrained(\n"
                '    "BAAI/bge-small-en-v1.5", export=True, batch_size=1, sequence_length=384\n'
                ")\n"
            ),
            after=(
                "from sentence_transformers import SentenceTransformer\n\n"
                "# neuron-migrate(NM303): inputs must keep these shapes: max 384 tokens and batch 1; encode() pads "
                "each batch to its longest text, so other lengths compile new graphs\n"
                "model = SentenceTransformer(\n"
                '    "BAAI/bge-small-en-v1.5", device="neuron"\n'
                ")\n"
            ),
        ),
    )
    loads = dict.fromkeys(with_methods(SENTENCE_TRANSFORMERS, "from_pretrained"), "load")
    calls = {
        **loads,
        **dict.fromkeys(SENTENCE_TRANSFORMERS, "constructor"),
    }
    references = dict.fromkeys(SENTENCE_TRANSFORMERS, "reference")
    rows = ROWS

    def load(self, original: cst.Call, updated: cst.Call, qname: str):
        load = self.load_of(original)
        if not load.migrates:
            self.ctx.manual(original, 'load with `SentenceTransformer(model_id, device="neuron")`')
            return updated
        reading = load.reading
        settings = ExportSettings.read(reading)
        dropped = list(settings.dropped)
        extra = [new_keyword("device", '"neuron"')]
        review = []
        dtype, cast_review = settings.cast_dtype(gated=True)
        if "torch_dtype" in settings.passed or "dtype" in settings.passed:
            dtype_code = (settings.passed.get("dtype") or settings.passed["torch_dtype"]).code
        else:
            dtype_code = f"{self.ctx.require_import('torch')}.{dtype}" if dtype else ""
            review += [cast_review] if cast_review else []
        if dtype_code:
            extra.append(new_keyword("model_kwargs", f'{{"dtype": {dtype_code}}}'))
        for keyword in (settings.auto_cast, settings.auto_cast_type, settings.tensor_parallel):
            if keyword is not None:
                dropped.append(keyword.name)

        def rename(keyword: Keyword) -> str | None:
            if keyword.name not in settings.passed or keyword.name in ("dtype", "torch_dtype"):
                return None
            new = SENTENCE_TRANSFORMER_KEYWORDS.get(keyword.name)
            if new is None:
                dropped.append(f"{keyword.name} (not a SentenceTransformer argument)")
            return new

        args = reading.rebuilt(updated, rename) + extra
        if settings.shapes:
            review.append(self.shapes_review(settings.shapes))
        review += [r for r in (unresolved_review(original, reading), settings.checkpoint_review()) if r]
        self.ctx.review("; ".join(review) or "encode() pads each batch to its longest text: lengths vary")
        name = self.ctx.require_from_import("sentence_transformers", "SentenceTransformer")
        note = f'{qname.rsplit(".", 2)[1]} -> SentenceTransformer on device "neuron"'
        self.ctx.note(note + (f"; dropped {', '.join(dropped)}" if dropped else "") + self.spread_note(reading))
        return with_args(updated.with_changes(func=self.ctx.expr(name)), args)

    @staticmethod
    def shapes_review(shapes: dict[str, str]) -> str:
        shapes = dict(shapes)
        limits = []
        if "sequence_length" in shapes:
            limits.append(f"max {shapes.pop('sequence_length')} tokens")
        batch = shapes.pop("batch_size", None)
        limits += [f"{name}={value}" for name, value in shapes.items()]
        if batch is not None:
            limits.append(f"batch {batch}")
        return (
            f"inputs must keep these shapes: {' and '.join(limits)}; encode() pads each batch to its longest text, "
            "so other lengths compile new graphs"
        )

    def constructor(self, original: cst.Call, updated: cst.Call, qname: str):
        self.ctx.manual(original, 'load with `SentenceTransformer(model_id, device="neuron")`')
        return updated

    def reference(self, original: cst.CSTNode, updated: cst.CSTNode, qname: str):
        legacy = qname.rsplit(".", 1)[1]
        load = 'SentenceTransformer(model_id, device="neuron")'
        return self.rename_class(original, updated, legacy, "sentence_transformers", "SentenceTransformer", load)


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


@register
class PipelineToTransformers(NeuronLoaderRule):
    """``optimum.neuron.pipeline(task, model=..., export=True, input_shapes=...)`` ->
    ``transformers.pipeline(task, model=..., device="neuron")`` (stock pipelines run on TorchNeuron:
    Neuron docs, TorchNeuron resources)."""

    meta = RuleMeta(
        "NM304",
        'optimum.neuron.pipeline -> transformers.pipeline(..., device="neuron")',
        safety=REVIEW,
        risks=frozenset({"numerics", "performance"}),
        summary=(
            "The stock transformers pipeline on the neuron device. export=, compiler_args= (their auto_cast_type "
            "becomes dtype=) and the input shapes go; the marker names the shapes inputs must be padded to."
        ),
        docs=(DOCS_HF_NATIVE, DOCS_STATIC_SHAPES),
        triggers=OPTIMUM_TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron import pipeline\n\n"
                "classifier = pipeline(\n"
                '    "text-classification",\n'
                '    model="distilbert-base-uncased-finetuned-sst-2-english",\n'
                "    export=True,\n"
                '    input_shapes={"batch_size": 1, "sequence_length": 64},\n'
                ")\n"
            ),
            after=(
                "import transformers\n\n"
                "# neuron-migrate(NM304): inputs must keep these shapes: pad with padding=\"max_length\", "
                "max_length=64 and batch 1\n"
                "classifier = transformers.pipeline(\n"
                '    "text-classification",\n'
                '    model="distilbert-base-uncased-finetuned-sst-2-english",\n'
                '    device="neuron",\n'
                ")\n"
            ),
        ),
    )
    loads = dict.fromkeys(PIPELINE, "load")
    calls = dict(loads)
    max_positional = len(PIPELINE_PARAMS)
    manual_keywords = frozenset(TENSOR_PARALLEL)

    def load(self, original: cst.Call, updated: cst.Call, qname: str):
        load = self.load_of(original)
        if not load.migrates:
            self.ctx.manual(
                original,
                'use `transformers.pipeline(task, model=checkpoint, device="neuron")`; for tensor parallelism '
                'pass `model_kwargs={"distributed_config": DistributedConfig(tp_size=N)}` and launch with torchrun',
            )
            return updated
        reading = load.reading
        # optimum's positional order differs from transformers' after `model`: name them.
        names = {position: PIPELINE_PARAMS[n] for n, position in enumerate(reading.positional)}
        keywords = {name: Keyword(name, original.args[p].value) for p, name in names.items()}
        keywords.update(reading.keywords)
        review, dropped, shapes, dtype = self._export_settings(keywords)
        extra = []
        if dtype is not None and "dtype" not in keywords and "torch_dtype" not in keywords:
            extra.append(new_keyword("dtype", f"{self.ctx.require_import('torch')}.{dtype}"))
        if "device" not in keywords and "device_map" not in keywords:
            extra.append(new_keyword("device", '"neuron"'))
        if shapes:
            review.insert(0, shapes_review(shapes))
        review += [r for r in (unresolved_review(original, reading),) if r]

        def rename(keyword: Keyword) -> str | None:
            return None if keyword.name in dropped else RENAMED.get(keyword.name, keyword.name)

        args = []
        for position, arg in enumerate(updated.args):
            name = names.get(position)
            if name is not None and name not in dropped:
                args.append(arg if position < PIPELINE_POSITIONAL_KEPT else keyword_arg(arg, rename(keywords[name])))
        args += [arg for arg in reading.rebuilt(updated, rename) if arg.keyword is not None or arg.star] + extra
        self.ctx.review("; ".join(review) or 'pad inputs to fixed shapes (padding="max_length")')
        function = self.ctx.require_from_import("transformers", "pipeline")
        self.ctx.note(
            'optimum.neuron.pipeline -> transformers.pipeline on device "neuron"'
            + (f"; dropped {', '.join(dropped)}" if dropped else "")
            + self.spread_note(reading)
        )
        return with_args(updated.with_changes(func=self.ctx.expr(function)), args)

    @staticmethod
    def _export_settings(keywords: dict[str, Keyword]) -> tuple[list[str], list[str], dict[str, str], str | None]:
        """(review notes, dropped keyword names, input shapes, dtype) of the pipeline's export keywords."""
        review, dropped, shapes, dtype = [], [], {}, None
        for name, keyword in keywords.items():
            if name in ("batch_size", "sequence_length"):
                shapes[name] = keyword.code
            elif name == "input_shapes":
                pairs = dict_literal(keyword.value)
                if pairs is None:
                    review.append(f"inputs must keep the shapes in `{keyword.code}`: pad to them")
                else:
                    shapes.update({key: code_of(value).strip() for key, value in pairs.items()})
            elif name == "compiler_args":
                pairs = dict_literal(keyword.value)
                if pairs is None:
                    review.append(f"set dtype= to match the auto_cast_type in `{keyword.code}`")
                else:
                    settings = ExportSettings.read(Reading([], {k: Keyword(k, v) for k, v in pairs.items()}))
                    dtype, cast_review = settings.cast_dtype(gated=True)
                    review += [cast_review] if cast_review else []
            elif name not in EXPORT_ONLY or name == "task":
                continue
            dropped.append(name)
        return review, dropped, shapes, dtype


@register
class CompiledModelSave(NeuronLoaderRule):
    """``save_pretrained`` / ``push_to_hub`` on a model or pipeline loaded from optimum-neuron in this
    file saved the compiled artifact. Nothing is compiled ahead of time on TorchNeuron (Neuron docs:
    what changes), so what to save is a human's call."""

    meta = RuleMeta(
        "NM305",
        "save_pretrained of a compiled Neuron model",
        safety=MANUAL,
        risks=frozenset({"checkpoint-format"}),
        summary=(
            "The call saved the Neuron-compiled artifact for later loading. There is no such artifact now: "
            "keep the call only to save a plain checkpoint, or drop it."
        ),
        docs=(DOCS_WHAT_CHANGES,),
        triggers=OPTIMUM_TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron import NeuronModelForFeatureExtraction\n\n"
                'model = NeuronModelForFeatureExtraction.from_pretrained(model_id, export=True, batch_size=1, '
                "sequence_length=128)\n"
                'model.save_pretrained("bert_neuron/")\n'
            ),
            after=(
                "from transformers import AutoModel\n\n"
                "# neuron-migrate(NM301): inputs must keep these shapes: pad with padding=\"max_length\", "
                "max_length=128 and batch 1\n"
                'model = AutoModel.from_pretrained(model_id, device_map="neuron")\n'
                "# TODO(neuron-migrate NM305): this saved the Neuron-compiled model; nothing is compiled ahead of "
                "time now: drop it, or keep it to save a plain checkpoint\n"
                'model.save_pretrained("bert_neuron/")\n'
            ),
        ),
    )
    follow_up_todos = True

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        if not self.ctx.facts.get(LOADER_REGISTRY) or not isinstance(original.func, cst.Attribute):
            return updated
        if original.func.attr.value not in ("save_pretrained", "push_to_hub"):
            return updated
        load = self.index().methods.get(id(original))
        if load is not None and load.migrates:
            self.ctx.manual(
                original,
                "this saved the Neuron-compiled model; nothing is compiled ahead of time now: drop it, or keep it to "
                "save a plain checkpoint",
            )
        return updated


# Keyword arguments of a forward / generate call that carry the tokenizer's tensors.
TENSOR_KEYWORDS = frozenset(
    {"input_ids", "attention_mask", "token_type_ids", "position_ids", "pixel_values", "input_features", "inputs"}
)


@register
class InputsToModelDevice(NeuronLoaderRule):
    """The tokenizer's tensors follow the model to its device. optimum-neuron's compiled models took
    CPU tensors and copied them in; a stock model on ``device_map="neuron"`` needs its inputs on the
    same device (``BatchEncoding.to`` / ``Tensor.to``), or the first forward fails with a device mismatch.
    Pipelines move their inputs themselves and are left alone."""

    meta = RuleMeta(
        "NM308",
        "tokenizer outputs moved to the migrated model's device",
        safety=SAFE,
        summary=(
            'Where a model loaded from optimum-neuron now loads on "neuron", the return_tensors="pt" results '
            "passed to its generate() or forward (`**inputs`, `input_ids=...`) get `.to(model.device)`."
        ),
        docs=(DOCS_HF_INFERENCE,),
        triggers=OPTIMUM_TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron import NeuronModelForSequenceClassification\n\n"
                "model = NeuronModelForSequenceClassification.from_pretrained(model_id)\n"
                'inputs = tokenizer("hello", return_tensors="pt")\n'
                "logits = model(**inputs).logits\n"
            ),
            after=(
                "from transformers import AutoModelForSequenceClassification\n\n"
                "# neuron-migrate(NM301): this must be the original checkpoint: a Neuron-compiled one (*.neuron "
                "files) cannot be loaded\n"
                'model = AutoModelForSequenceClassification.from_pretrained(model_id, device_map="neuron")\n'
                'inputs = tokenizer("hello", return_tensors="pt")\n'
                "logits = model(**inputs.to(model.device)).logits\n"
            ),
        ),
    )

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        if not self.ctx.facts.get(LOADER_REGISTRY):
            return updated
        found = self.plan().get(id(original))
        if found is None:
            return updated
        receiver, positions = found
        device = cst.parse_expression(f"{receiver}.device")
        args = list(updated.args)
        for position in positions:
            moved = cst.Call(func=cst.Attribute(value=args[position].value, attr=cst.Name("to")), args=[cst.Arg(device)])
            args[position] = args[position].with_changes(value=moved)
        self.ctx.confirm_safe()
        self.ctx.note(f"the tokenizer's tensors move to {receiver}.device: the model now runs on the neuron device")
        return updated.with_changes(args=args)

    def plan(self) -> dict[int, tuple[str, list[int]]]:
        """id(generate / forward call of a migrated model) -> (the model's code, arguments to move)."""
        key = "optimum_inputs_plan"
        if key not in self.ctx.facts:
            self.ctx.facts[key] = self._plan()
        return self.ctx.facts[key]  # type: ignore[return-value]

    def _plan(self) -> dict[int, tuple[str, list[int]]]:
        index = self.index()
        models = [l for l in index.loads.values() if l.migrates and isinstance(l.rule, TransformersModelRule)]
        if not models:
            return {}
        targets = {load.target for load in models if load.target}
        out = {}
        for call in index.scan.calls:
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "generate":
                receiver = code_of(func.value)  # generate() is a model's, wherever it came from
            elif isinstance(func, (cst.Name, cst.Attribute)) and code_of(func) in targets:
                receiver = code_of(func)
            else:
                continue
            positions = [n for n, arg in enumerate(call.args) if self._carries_cpu_tensors(index, arg, n)]
            if positions:
                out[id(call)] = (receiver, positions)
        return out

    @staticmethod
    def _carries_cpu_tensors(index: LoaderIndex, arg: cst.Arg, position: int) -> bool:
        """``**inputs``, ``input_ids=inputs["input_ids"]`` or a first positional made of the tokenizer's tensors."""
        if arg.star == "**":
            value = arg.value
        elif arg.star or not (
            (arg.keyword is None and position == 0) or (arg.keyword is not None and arg.keyword.value in TENSOR_KEYWORDS)
        ):
            return False
        else:
            # inputs["input_ids"], inputs.input_ids: the item of a BatchEncoding
            value = arg.value.value if isinstance(arg.value, (cst.Subscript, cst.Attribute)) else arg.value
        if returns_tensors(value):
            return True
        return isinstance(value, cst.Name) and index.cpu_tensors(value)


@register
class CompiledModelSettings(NeuronLoaderRule):
    """``model.neuron_config`` held the settings a Neuron model was compiled with; a stock
    transformers model has no such attribute (AttributeError). A shape the load call spelled out as
    a number is that number now; anything else is for a human."""

    # Its TODO is about an attribute the optimum import made meaningful; a rerun, after that import went, keeps it.
    follow_up_todos = True

    meta = RuleMeta(
        "NM307",
        "`neuron_config` of a compiled Neuron model",
        safety=REVIEW,
        risks=frozenset({"performance"}),
        summary=(
            "`model.neuron_config.batch_size` (or sequence_length) becomes the number the load call compiled for; "
            "other uses of neuron_config get a TODO: the caller now chooses the shapes it pads to."
        ),
        docs=(DOCS_WHAT_CHANGES, DOCS_STATIC_SHAPES),
        triggers=OPTIMUM_TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron import NeuronModelForCausalLM\n\n"
                "model = NeuronModelForCausalLM.from_pretrained(model_id, export=True, batch_size=4)\n"
                "prompts = prompts[: model.neuron_config.batch_size]\n"
            ),
            after=(
                "from transformers import AutoModelForCausalLM\n\n"
                "# neuron-migrate(NM302): static KV cache: keep batch 4; for serving use vLLM's Neuron backend\n"
                'model = AutoModelForCausalLM.from_pretrained(model_id, device_map="neuron")\n'
                'model.generation_config.cache_implementation = "static"\n'
                "# neuron-migrate(NM307): 4 is the batch size the model was compiled for; a stock model has no "
                "neuron_config: keep it only as the shape you pad inputs to\n"
                "prompts = prompts[: 4]\n"
            ),
        ),
    )

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute):
        if not self.ctx.facts.get(LOADER_REGISTRY) or NEURON_CONFIG not in (original.attr.value, _inner_attr(original)):
            return updated
        index = self.index()
        found = index.neuron_configs.get(id(original))
        # Only where this file loaded a Neuron model that is now a stock one.
        if found is None or not any(load.migrates for load in index.loads.values()):
            return updated
        load, field_name = found
        value = self._compiled_value(load, field_name)
        if value is None:
            self.ctx.manual(
                original,
                f"`{code_of(original)}` is gone: a stock model has no compiled settings; use the batch size and "
                "sequence length your inputs are padded to",
            )
            return updated
        self.ctx.review(
            f"{value} is the {field_name.replace('_', ' ')} the model was compiled for; a stock model has no "
            "neuron_config: keep it only as the shape you pad inputs to"
        )
        self.ctx.note(f"{code_of(original)} -> {value} (the load call's {field_name})")
        return cst.Integer(value)

    @staticmethod
    def _compiled_value(load: Load | None, field_name: str | None) -> str | None:
        """The number the load call gave ``field_name`` (batch_size, sequence_length), if it did."""
        if load is None or field_name is None or load.reading is None:
            return None
        value = ExportSettings.read(load.reading).shapes.get(field_name)
        return value if value is not None and value.isdigit() else None


def _inner_attr(node: cst.Attribute) -> str:
    return node.value.attr.value if isinstance(node.value, cst.Attribute) else ""


@register
class CompiledModelBaseClass(Rule):
    """``NeuronTracedModel``, ``NeuronModel``, ``NeuronPreTrainedModel`` and (up to 0.1)
    ``NeuronDecoderModel`` wrapped compiled artifacts; stock models need no wrapper (Neuron docs,
    TorchNeuron resources)."""

    meta = RuleMeta(
        "NM306",
        "Neuron compiled-model base classes",
        safety=MANUAL,
        risks=frozenset({"checkpoint-format"}),
        summary=(
            "These classes wrapped a compiled TorchScript/NxD artifact. Use the transformers model class (or "
            "PreTrainedModel for type checks) instead."
        ),
        docs=(DOCS_HF_NATIVE,),
        triggers=OPTIMUM_TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron import NeuronTracedModel\n\n"
                "def is_compiled(model):\n"
                "    return isinstance(model, NeuronTracedModel)\n"
            ),
            after=(
                "from optimum.neuron import NeuronTracedModel\n\n"
                "def is_compiled(model):\n"
                "    # TODO(neuron-migrate NM306): NeuronTracedModel wrapped a compiled artifact and has no "
                "counterpart: use the transformers model class, or PreTrainedModel for type checks\n"
                "    return isinstance(model, NeuronTracedModel)\n"
            ),
        ),
    )
    rows = ROWS
