"""What the neuronx_distributed rules share: helpers, constants and base classes."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import ClassVar

import libcst as cst

from neuron_migrate.migrate.context import code_of, root_name
from neuron_migrate.rules import load_all
from neuron_migrate.rules.base import Rule
from neuron_migrate.rules.calls import bind_args, is_plain_reference, literal
from neuron_migrate.rules.neuronx_trace.common import LegacyUse, LegacyUseRule
from neuron_migrate.rules.rows import ANY_PATH, Row
from neuron_migrate.rules.tables.neuronx_distributed import NXD

NEURON_DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest"
DOCS_DISTRIBUTED = f"{NEURON_DOCS}/torch/guides/torch-distributed.html"
DOCS_TRANSITION = f"{NEURON_DOCS}/about-neuron/announcements/neuron2.x/announce-transition-pytorch-trainium.html"
DOCS_COMPILE = f"{NEURON_DOCS}/torch/compile/reference-torch-compile.html"
DOCS_NO_XLA_INFERENCE = (
    f"{NEURON_DOCS}/about-neuron/announcements/neuron2.x/announce-no-support-torch-xla-inference-trn.html"
)
TORCH_DOCS = "https://pytorch.org/docs/stable"
DOCS_MESH = f"{TORCH_DOCS}/distributed.html"
DOCS_TP = f"{TORCH_DOCS}/distributed.tensor.parallel.html"
DOCS_FSDP2 = f"{TORCH_DOCS}/distributed.fsdp.fully_shard.html"
DOCS_DCP = f"{TORCH_DOCS}/distributed.checkpoint.html"
DOCS_PIPELINING = f"{TORCH_DOCS}/distributed.pipelining.html"
DOCS_PEFT = "https://huggingface.co/docs/peft/package_reference/lora"
TRIGGERS = (b"neuronx_distributed",)
MESH_DIMS = 'mesh_dim_names=("dp", "tp")'


def build_mesh(tp: str = "tp") -> str:
    return f'`mesh = init_device_mesh("neuron", (dist.get_world_size() // {tp}, {tp}), {MESH_DIMS})`'


def size_code(bound: dict[str, cst.Arg], name: str, fallback: str) -> str:
    """A parallel size as code for a marker: the literal or plain name given, else ``fallback``."""
    arg = bound.get(name)
    if arg is not None and (isinstance(literal(arg.value), int) or is_plain_reference(arg.value)):
        return code_of(arg.value)
    return fallback


def submodule_name(rule: Rule, call: cst.Call) -> str | None:
    """``up`` for ``self.up = Layer(...)``: the last part of the layer's name in the model."""
    line = rule.ctx.statement_for_call.get(id(call))
    if line is None or not isinstance(line.body[0], cst.Assign) or len(line.body[0].targets) != 1:
        return None
    target = line.body[0].targets[0].target
    return target.attr.value if isinstance(target, cst.Attribute) else None


# ----- which rule answers which NxD name ------------------------------------------------------------

# Every NxD rule, as its module defines it; no name is answered by two of them, so their order does not matter.
_NXD_RULES: list[type[NxdRule]] = []

# What answers an NxD name: the rule's method of that name, or the row of the family table.
Answer = str | Row
# name -> the rule answering it, and how
Answers = dict[str, tuple["type[NxdRule]", Answer]]


class NxdRule(LegacyUseRule):
    """Base of the NxD rules. A name with a fixed next step is a row of the family table
    (rules/tables/neuronx_distributed.py; the rule declares ``rows = ROWS``). A name whose answer needs
    code is in ``apis`` (an API name, the last part of its qualified name or the last two for names as
    common as ``save``) or ``modules`` (a module name, for that module's other names), mapped to the
    method that answers it. :func:`owner` decides, once for all rules and rows."""

    prefixes = (NXD,)
    apis: ClassVar[dict[str, str]] = {}
    modules: ClassVar[dict[str, str]] = {}
    # The rule of the names nothing else answers (one: other_nxd_api), with the method answering them.
    answers_the_rest: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "meta" in cls.__dict__:  # a rule, not a base of rules
            _NXD_RULES.append(cls)

    def handle_use(self, original, updated, use: LegacyUse):
        rule, answer, api = owner(use.qname)
        if rule is not type(self):
            return updated
        if isinstance(answer, Row):
            return answer.action.apply(self, original, updated)
        return getattr(self, answer)(original, updated, use, api)

    @classmethod
    def automatic(cls, use: LegacyUse, answer: Answer) -> bool:
        """Whether the use is rewritten rather than marked (it then needs no place in the plan)."""
        return False


def answer_tables(rules: Iterable[type[NxdRule]]) -> tuple[Answers, Answers]:
    """API name -> (rule, answer) and module name -> (rule, answer), over the rules' methods and rows. A
    name two rules answer is refused: which one would win is an accident of their order."""
    apis: Answers = {}
    modules: Answers = {}
    for rule in rules:
        entries = [(apis, name, method) for name, method in rule.apis.items()]
        entries += [(modules, name, method) for name, method in rule.modules.items()]
        for row in rule.rows:
            name = row.name.removeprefix(NXD + ANY_PATH)
            entries.append((modules, name.removesuffix(".*"), row) if row.is_prefix else (apis, name, row))
        for table, name, answer in entries:
            if name in table:
                raise ValueError(f"NxD name {name} is answered by both {table[name][0].meta.id} and {rule.meta.id}")
            table[name] = (rule, answer)
    return apis, modules


@cache
def _answers() -> tuple[Answers, Answers]:
    load_all()  # every rule module is imported, so every rule is in _NXD_RULES
    return answer_tables(_NXD_RULES)


@cache
def owner(qname: str) -> tuple[type[NxdRule], Answer, str]:
    """(rule, answer, API name) for a qualified name under neuronx_distributed: the API named nearest the
    end of the path (``module.api`` before ``api``), else the module nearest the end, else the rule of
    the rest."""
    apis, modules = _answers()
    parts = qname.split(".")[1:]
    for position in range(len(parts) - 1, -1, -1):
        keys = [parts[position]]
        if position:
            keys.insert(0, f"{parts[position - 1]}.{parts[position]}")
        for key in keys:
            if key in apis:
                rule, answer = apis[key]
                return rule, answer, key
    for position in range(len(parts) - 1, -1, -1):
        if parts[position] in modules:
            rule, answer = modules[parts[position]]
            return rule, answer, parts[-1]
    rest = next(rule for rule in _NXD_RULES if rule.answers_the_rest)
    return rest, rest.answers_the_rest, parts[-1] if parts else NXD


def is_automatic(use: LegacyUse) -> bool:
    rule, answer, _ = owner(use.qname)
    return rule.automatic(use, answer)


# ----- NM420: one plan per file ----------------------------------------------------------------------

PLAN_STEPS = (
    (
        '1. DeviceMesh: `init_device_mesh("neuron", (dp, tp), mesh_dim_names=("dp", "tp"))` after '
        '`dist.init_process_group("neuron")`'
    ),
    (
        '2. plain nn.Linear/nn.Embedding layers + `parallelize_module(model, mesh["tp"], {fqn: ColwiseParallel() or '
        "RowwiseParallel()})`"
    ),
    "3. loss on sharded logits under `loss_parallel()`",
    '4. ZeRO-1 -> FSDP2 `fully_shard(model, mesh=mesh["dp"])` and a plain torch.optim optimizer',
    "5. checkpoints with torch.distributed.checkpoint (`dcp.save` / `dcp.load`)",
    "6. launch one process per NeuronCore with torchrun",
)
PLAN_SHORT = (
    "1. DeviceMesh 2. nn layers + parallelize_module 3. loss_parallel 4. FSDP2 for ZeRO-1 "
    "5. DCP checkpoints 6. torchrun"
)


def nxd_bindings(node: cst.Import | cst.ImportFrom) -> set[str]:
    """The names an import statement binds from neuronx_distributed."""
    if isinstance(node, cst.Import):
        names = set()
        for alias in node.names:
            dotted = code_of(alias.name)
            if dotted == NXD or dotted.startswith(NXD + "."):
                names.add(alias.asname.name.value if alias.asname else dotted.split(".")[0])
        return names
    if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
        return set()
    module = code_of(node.module)
    if module != NXD and not module.startswith(NXD + "."):
        return set()
    return {alias.asname.name.value if alias.asname else code_of(alias.name) for alias in node.names}


def use_root(use: LegacyUse) -> str:
    return root_name(use.node.func if isinstance(use.node, cst.Call) else use.node)


# ----- NM421: parallel_state -> DeviceMesh -----------------------------------------------------------

INIT_PARAMS = ("tensor_model_parallel_size", "pipeline_model_parallel_size")
# ----- NM422: parallel layers -> nn layers + parallelize_module --------------------------------------

# NxD layer -> (stock layer, its sharding style, the NxD arguments read for the marker)
LAYERS = {
    "ColumnParallelLinear": ("nn.Linear", "ColwiseParallel", ("input_size", "output_size", "bias", "gather_output")),
    "RowParallelLinear": ("nn.Linear", "RowwiseParallel", ("input_size", "output_size", "bias", "input_is_parallel")),
    "ParallelEmbedding": ("nn.Embedding", "RowwiseParallel", ("num_embeddings", "embedding_dim", "padding_idx")),
}
# Stock-layer arguments carried into the suggested layer when the NxD call passes them.
CARRIED = ("bias", "padding_idx", "dtype")
# ----- NM424: move_model_to_device -> model.to(device) ------------------------------------------------

MOVE_PARAMS = ("model", "device")


def move_arguments(call: cst.CSTNode) -> dict[str, cst.Arg] | None:
    if not isinstance(call, cst.Call):
        return None
    bound = bind_args(call, MOVE_PARAMS)
    return bound if bound is not None and "model" in bound else None


# ----- NM428: ZeRO-1 -> FSDP2 ------------------------------------------------------------------------

# Where each API takes the optimizer class and the parameters (the rest are optimizer options).
OPTIMIZER_PARAMS = {
    "NeuronZero1Optimizer": (("params", "optimizer_class"), "params"),
    "initialize_parallel_optimizer": (("nxd_config", "optimizer_class", "parameters"), "parameters"),
}
# Options of the ZeRO-1 wrapper itself, which the plain optimizer does not take.
ZERO1_OPTIONS = frozenset(
    {
        "optimizer_dtype",
        "grad_clipping",
        "max_norm",
        "pin_layout",
        "sharding_groups",
        "grad_norm_groups",
        "lazy_init",
        "coalesce_cc",
    }
)
# ----- NM429: trainer config / parallel model -> DeviceMesh + parallelize_module + fully_shard ------

# neuronx_distributed_config argument -> its stock-PyTorch counterpart, named in the marker when passed.
CONFIG_PARTS = {
    "optimizer_config": 'ZeRO-1: `fully_shard(model, mesh=mesh["dp"])`',
    "pipeline_parallel_size": "pipeline stages: torch.distributed.pipelining",
    "pipeline_config": "pipeline stages: torch.distributed.pipelining",
    "activation_checkpoint_config": "activation checkpointing: `torch.utils.checkpoint.checkpoint` per block",
    "sequence_parallel": "sequence parallel: `SequenceParallel()` entries in the plan",
    "lora_config": "LoRA: `peft.get_peft_model(model, peft.LoraConfig(...))`",
}
PARALLEL_MODEL = (
    'build the model yourself, then `parallelize_module(model, mesh["tp"], plan)` and `fully_shard(model, '
    'mesh=mesh["dp"])`'
)
# ----- NM430: LoraConfig -> peft.LoraConfig ---------------------------------------------------------

PEFT_DEFAULTS = {"r": "8", "lora_alpha": "8", "lora_dropout": "0.0", "target_modules": None}
# NxD LoraConfig argument -> the peft spelling, named in the marker when the call uses it.
NXD_LORA_NAMES = {"lora_rank": "r", "lora_bias": "bias", "enable_lora": ""}


def peft_only(call: cst.CSTNode) -> bool:
    """A LoraConfig call written only with arguments that mean the same in peft."""
    if not isinstance(call, cst.Call) or not call.args:
        return False
    return all(arg.keyword is not None and not arg.star and arg.keyword.value in PEFT_DEFAULTS for arg in call.args)
