"""neuronx_distributed (NxD Core / NxD Training): model surgery onto stock torch.distributed.

NxD's parallel layers, parallel_state groups, ZeRO-1 optimizer, pipeline engine, trainer helpers and
checkpoint format are end-of-support on TorchNeuron; AWS points to DTensor, FSDP2 and DDP, which
run on the ``"neuron"`` process-group backend. None of that is a rename: a tensor-parallel model is
rebuilt from plain ``nn`` layers plus a ``parallelize_module`` plan on a DeviceMesh. So every use is
marked with the concrete next step, and each file gets one summary of the whole job (NM420). Two
APIs translate directly: ``move_model_to_device`` and a ``LoraConfig`` written with peft's arguments.

NxD exports names from several module paths, so uses are matched by API name under the
``neuronx_distributed`` package, not by one exact import path.

Sources: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html,
the NxD end-of-support announcement and the PyTorch DeviceMesh / tensor-parallel / FSDP2 / DCP /
pipelining docs.
"""

from __future__ import annotations

from functools import cache
from typing import ClassVar

import libcst as cst

from neuron_migrate.migrate.context import code_of, root_name
from neuron_migrate.rules.base import MANUAL, REVIEW, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import arg_value, bind_args, is_plain_reference, literal, receiver
from neuron_migrate.rules.neuronx_trace import LegacyUse, LegacyUseRule, legacy_uses, one_line

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

NXD = "neuronx_distributed"
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


class NxdRule(LegacyUseRule):
    """Base of the NxD rules: ``apis`` maps an API name (the last part of its qualified name, or the
    last two for names as common as ``save``) to the method handling it; ``modules`` maps a module
    name to the method for that module's other names. :func:`owner` decides, once for all rules."""

    prefixes = (NXD,)
    apis: ClassVar[dict[str, str]] = {}
    modules: ClassVar[dict[str, str]] = {}

    def handle_use(self, original, updated, use: LegacyUse):
        rule, method, api = owner(use.qname)
        if rule is not type(self):
            return updated
        return getattr(self, method)(original, updated, use, api)

    @classmethod
    def automatic(cls, use: LegacyUse, method: str) -> bool:
        """Whether the use is rewritten rather than marked (it then needs no place in the plan)."""
        return False


@cache
def owner(qname: str) -> tuple[type[NxdRule], str, str]:
    """(rule, method, API name) for a qualified name under neuronx_distributed."""
    parts = qname.split(".")[1:]
    for position in range(len(parts) - 1, -1, -1):
        keys = [parts[position]]
        if position:
            keys.insert(0, f"{parts[position - 1]}.{parts[position]}")
        for key in keys:
            for rule in NXD_RULES:
                if key in rule.apis:
                    return rule, rule.apis[key], key
    for position in range(len(parts) - 1, -1, -1):
        for rule in NXD_RULES:
            if parts[position] in rule.modules:
                return rule, rule.modules[parts[position]], parts[-1] if parts else NXD
    return OtherNxdApi, "generic", parts[-1] if parts else NXD


def is_automatic(use: LegacyUse) -> bool:
    rule, method, _ = owner(use.qname)
    return rule.automatic(use, method)


class AdviceRule(NxdRule):
    """An NxD rule whose answers are a table of next steps: ``advice`` maps API or module name to text."""

    advice: ClassVar[dict[str, str]] = {}

    def advise(self, original, updated, use: LegacyUse, api: str):
        self.ctx.manual(original, self.advice.get(api) or self.advice[self.module_of(use)])
        return updated

    def module_of(self, use: LegacyUse) -> str:
        return next(part for part in reversed(use.qname.split(".")) if part in self.modules)


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


@register
class NxdMigrationPlan(Rule):
    """One finding per file that lists its NxD APIs and the whole port in order, on the import line the
    first hand-migrated use comes from; the per-use markers (NM421-NM449) stay short. The target
    stack is the one the Neuron distributed guide lists (DOCS_DISTRIBUTED): DeviceMesh, DTensor
    tensor parallelism, FSDP2, DCP and torchrun."""

    meta = RuleMeta(
        "NM420",
        "neuronx_distributed: migration plan for the file",
        safety=MANUAL,
        risks=frozenset({"collectives", "checkpoint-format", "launch"}),
        summary=(
            "NxD is end-of-support on TorchNeuron. The file's NxD APIs are listed with the port in order: DeviceMesh, "
            "nn layers + parallelize_module, loss_parallel, FSDP2 for ZeRO-1, DCP checkpoints, torchrun."
        ),
        docs=(DOCS_DISTRIBUTED, DOCS_TRANSITION, DOCS_MESH, DOCS_TP),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from neuronx_distributed.parallel_layers import ColumnParallelLinear\n\n"
                "up = ColumnParallelLinear(1024, 4096, gather_output=False)\n"
            ),
            after=(
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"ColumnParallelLinear in order: {PLAN_SHORT}\n"
                "from neuronx_distributed.parallel_layers import ColumnParallelLinear\n\n"
                "# TODO(neuron-migrate NM422): use `nn.Linear(1024, 4096)`; shard it with `parallelize_module("
                'model, mesh["tp"], {"<fqn>": ColwiseParallel()})`\n'
                "up = ColumnParallelLinear(1024, 4096, gather_output=False)\n"
            ),
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.placed = False

    def leave_Import(self, original: cst.Import, updated: cst.Import):
        return self._plan(original, updated)

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom):
        return self._plan(original, updated)

    def _plan(self, original, updated):
        if self.placed:
            return updated
        bound = nxd_bindings(original)
        if not bound:
            return updated
        manual = [use for use in legacy_uses(self.ctx, (NXD,)).values() if not is_automatic(use)]
        if not manual or use_root(manual[0]) not in bound:
            return updated
        self.placed = True
        apis = list(dict.fromkeys(owner(use.qname)[2] for use in manual))
        message = (
            f"neuronx_distributed is end-of-support; port this file's {', '.join(apis)} in order: {PLAN_SHORT}"
        )
        self.ctx.manual(original, message, fix="; ".join(PLAN_STEPS))
        return updated


# ----- NM421: parallel_state -> DeviceMesh -----------------------------------------------------------

MESH_QUERIES = {
    "get_tensor_model_parallel_rank": 'read it from the DeviceMesh: `mesh["tp"].get_local_rank()`',
    "get_tensor_model_parallel_size": 'read it from the DeviceMesh: `mesh["tp"].size()`',
    "get_tensor_model_parallel_group": 'read it from the DeviceMesh: `mesh["tp"].get_group()`',
    "get_data_parallel_rank": 'read it from the DeviceMesh: `mesh["dp"].get_local_rank()`',
    "get_data_parallel_size": 'read it from the DeviceMesh: `mesh["dp"].size()`',
    "get_data_parallel_group": 'read it from the DeviceMesh: `mesh["dp"].get_group()`',
    "model_parallel_is_initialized": "test the DeviceMesh instead: `mesh is not None`",
    "destroy_model_parallel": "tear down with `dist.destroy_process_group()`",
}
PIPELINE_QUERIES = (
    "get_pipeline_model_parallel_rank",
    "get_pipeline_model_parallel_size",
    "get_pipeline_model_parallel_group",
)
INIT_PARAMS = ("tensor_model_parallel_size", "pipeline_model_parallel_size")


@register
class ParallelStateToDeviceMesh(NxdRule):
    """``parallel_state`` process groups -> a DeviceMesh (``init_device_mesh("neuron", ...)``,
    DOCS_MESH) whose dimensions give ranks, sizes and groups; pipeline stages come from
    torch.distributed.pipelining (DOCS_PIPELINING)."""

    meta = RuleMeta(
        "NM421",
        "parallel_state -> DeviceMesh",
        safety=MANUAL,
        risks=frozenset({"collectives"}),
        summary=(
            'initialize_model_parallel becomes init_device_mesh("neuron", (dp, tp), mesh_dim_names=("dp", "tp")); '
            'rank, size and group queries read mesh["tp"] / mesh["dp"].'
        ),
        docs=(DOCS_MESH, DOCS_DISTRIBUTED, DOCS_PIPELINING),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from neuronx_distributed.parallel_layers import parallel_state\n\n"
                "def setup():\n"
                "    parallel_state.initialize_model_parallel(tensor_model_parallel_size=8)\n"
                "    return parallel_state.get_tensor_model_parallel_rank()\n"
            ),
            after=(
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"initialize_model_parallel, get_tensor_model_parallel_rank in order: {PLAN_SHORT}\n"
                "from neuronx_distributed.parallel_layers import parallel_state\n\n"
                "def setup():\n"
                f"    # TODO(neuron-migrate NM421): build a DeviceMesh instead: {build_mesh('8')} "
                "(torch.distributed.device_mesh)\n"
                "    parallel_state.initialize_model_parallel(tensor_model_parallel_size=8)\n"
                "    # TODO(neuron-migrate NM421): read it from the DeviceMesh: `mesh[\"tp\"].get_local_rank()`\n"
                "    return parallel_state.get_tensor_model_parallel_rank()\n"
            ),
        ),
    )
    apis = {
        "initialize_model_parallel": "initialize",
        **{name: "query" for name in MESH_QUERIES},
        **{name: "pipeline_query" for name in PIPELINE_QUERIES},
    }
    modules = {"parallel_state": "other"}

    def initialize(self, original, updated, use: LegacyUse, api: str):
        call = original if isinstance(original, cst.Call) else None
        bound = (bind_args(call, INIT_PARAMS, other_keywords=True) if call is not None else None) or {}
        message = f"build a DeviceMesh instead: {build_mesh(size_code(bound, 'tensor_model_parallel_size', 'tp'))}"
        message += " (torch.distributed.device_mesh)"
        if arg_value(bound, "pipeline_model_parallel_size", default=1) != 1:
            message += "; pipeline stages: torch.distributed.pipelining"
        self.ctx.manual(original, message)
        return updated

    def query(self, original, updated, use: LegacyUse, api: str):
        self.ctx.manual(original, MESH_QUERIES[api])
        return updated

    def pipeline_query(self, original, updated, use: LegacyUse, api: str):
        self.ctx.manual(
            original, "pipeline stages come from torch.distributed.pipelining (the stage index of your PipelineStage)"
        )
        return updated

    def other(self, original, updated, use: LegacyUse, api: str):
        self.ctx.manual(
            original,
            'parallel_state is gone: derive ranks, sizes and groups from the DeviceMesh (`mesh["tp"]`, `mesh["dp"]`)',
        )
        return updated


# ----- NM422: parallel layers -> nn layers + parallelize_module --------------------------------------

# NxD layer -> (stock layer, its sharding style, the NxD arguments read for the marker)
LAYERS = {
    "ColumnParallelLinear": ("nn.Linear", "ColwiseParallel", ("input_size", "output_size", "bias", "gather_output")),
    "RowParallelLinear": ("nn.Linear", "RowwiseParallel", ("input_size", "output_size", "bias", "input_is_parallel")),
    "ParallelEmbedding": ("nn.Embedding", "RowwiseParallel", ("num_embeddings", "embedding_dim", "padding_idx")),
}
# Stock-layer arguments carried into the suggested layer when the NxD call passes them.
CARRIED = ("bias", "padding_idx", "dtype")


@register
class ParallelLayersToTensorParallel(AdviceRule):
    """ColumnParallelLinear / RowParallelLinear / ParallelEmbedding -> ``nn.Linear`` / ``nn.Embedding``
    sharded by a ``parallelize_module`` plan with ``ColwiseParallel`` / ``RowwiseParallel`` (DOCS_TP)."""

    meta = RuleMeta(
        "NM422",
        "parallel layers -> nn layers + parallelize_module",
        safety=MANUAL,
        risks=frozenset({"collectives", "numerics"}),
        summary=(
            "Tensor-parallel layers become plain nn.Linear / nn.Embedding; a parallelize_module plan on mesh[\"tp\"] "
            "shards them (ColwiseParallel / RowwiseParallel), DTensor places the collectives."
        ),
        docs=(DOCS_TP, DOCS_DISTRIBUTED),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import torch.nn as nn\n"
                "from neuronx_distributed.parallel_layers import RowParallelLinear\n\n\n"
                "class MLP(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.down = RowParallelLinear(4096, 1024, bias=False, input_is_parallel=True)\n"
            ),
            after=(
                "import torch.nn as nn\n"
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"RowParallelLinear in order: {PLAN_SHORT}\n"
                "from neuronx_distributed.parallel_layers import RowParallelLinear\n\n\n"
                "class MLP(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        # TODO(neuron-migrate NM422): use `nn.Linear(4096, 1024, bias=False)`; shard it with "
                '`parallelize_module(model, mesh["tp"], {"<path>.down": RowwiseParallel()})`\n'
                "        self.down = RowParallelLinear(4096, 1024, bias=False, input_is_parallel=True)\n"
            ),
        ),
    )
    apis = {name: "layer" for name in LAYERS}
    modules = {"mappings": "advise", "layers": "advise"}
    advice = {
        "mappings": (
            "the parallelize_module plan places these collectives; an explicit one is "
            '`dist.all_reduce(x, group=mesh["tp"].get_group())`'
        ),
        "layers": 'use the stock torch.nn layer and shard it with a parallelize_module plan on `mesh["tp"]`',
    }

    def layer(self, original, updated, use: LegacyUse, api: str):
        stock, style, params = LAYERS[api]
        bound = bind_args(original, params, other_keywords=True) if isinstance(original, cst.Call) else None
        if bound is None or params[0] not in bound or params[1] not in bound:
            self.ctx.manual(
                original, f"replace {api} with `{stock}` sharded by `{style}()` in a parallelize_module plan"
            )
            return updated
        args = [code_of(bound[params[0]].value), code_of(bound[params[1]].value)]
        keywords = {arg.keyword.value: arg.value for arg in original.args if arg.keyword is not None}
        if "bias" in bound:
            keywords["bias"] = bound["bias"].value
        args += [f"{name}={code_of(keywords[name])}" for name in CARRIED if name in keywords]
        layer = f"{stock}({', '.join(args)})"
        name = submodule_name(self, original)
        key = f"<path>.{name}" if name else "<fqn>"
        plan = f'parallelize_module(model, mesh["tp"], {{"{key}": {self._style(api, style, bound, keywords)}}})'
        self.ctx.manual(original, f"use `{layer}`; shard it with `{plan}`")
        return updated

    @staticmethod
    def _style(api: str, style: str, bound: dict[str, cst.Arg], keywords) -> str:
        # NxD gathered a column-parallel output and split a row-parallel input unless told otherwise;
        # with DTensor that is a replicated output / input layout.
        if api == "ParallelEmbedding" and literal(keywords.get("shard_across_embedding")) is True:
            return "ColwiseParallel()"  # sharded along the embedding dimension, not the vocabulary
        if api == "ColumnParallelLinear" and arg_value(bound, "gather_output", default=True) is not False:
            return f"{style}(output_layouts=Replicate())"
        if api == "RowParallelLinear" and arg_value(bound, "input_is_parallel", default=False) is not True:
            return f"{style}(input_layouts=Replicate())"
        return style + "()"


# ----- NM423: parallel_cross_entropy -> loss_parallel -------------------------------------------------


@register
class ParallelCrossEntropyToLossParallel(NxdRule):
    """``parallel_cross_entropy(logits, labels)`` -> ``F.cross_entropy`` under ``loss_parallel()`` on
    vocabulary-sharded DTensor logits (DOCS_TP)."""

    meta = RuleMeta(
        "NM423",
        "parallel_cross_entropy -> loss_parallel()",
        safety=MANUAL,
        risks=frozenset({"numerics"}),
        summary=(
            "Cross-entropy on vocabulary-sharded logits is F.cross_entropy inside `with loss_parallel():`; the "
            "output layer must return a DTensor (ColwiseParallel(use_local_output=False))."
        ),
        docs=(DOCS_TP,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from neuronx_distributed.parallel_layers.loss_functions import parallel_cross_entropy\n\n"
                "loss = parallel_cross_entropy(logits, labels).mean()\n"
            ),
            after=(
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"parallel_cross_entropy in order: {PLAN_SHORT}\n"
                "from neuronx_distributed.parallel_layers.loss_functions import parallel_cross_entropy\n\n"
                "# TODO(neuron-migrate NM423): use `with loss_parallel(): loss = "
                'F.cross_entropy(logits.flatten(0, -2), labels.flatten(), reduction="none")` on DTensor logits '
                "(output layer: `ColwiseParallel(use_local_output=False)`)\n"
                "loss = parallel_cross_entropy(logits, labels).mean()\n"
            ),
        ),
    )
    apis = {"parallel_cross_entropy": "loss"}
    modules = {"loss_functions": "loss"}

    def loss(self, original, updated, use: LegacyUse, api: str):
        bound = None
        if isinstance(original, cst.Call):
            bound = bind_args(original, ("parallel_logits", "labels", "label_smoothing"))
        logits, labels = "logits", "labels"
        extra = ""
        if bound and "parallel_logits" in bound and "labels" in bound:
            logits = one_line(bound["parallel_logits"].value, 30) or logits
            labels = one_line(bound["labels"].value, 30) or labels
            logits = receiver(cst.parse_expression(logits))
            labels = receiver(cst.parse_expression(labels))
            if "label_smoothing" in bound:
                extra = f", label_smoothing={code_of(bound['label_smoothing'].value)}"
        loss = f'F.cross_entropy({logits}.flatten(0, -2), {labels}.flatten(), reduction="none"{extra})'
        self.ctx.manual(
            original,
            f"use `with loss_parallel(): loss = {loss}` on DTensor logits "
            "(output layer: `ColwiseParallel(use_local_output=False)`)",
        )
        return updated


# ----- NM424: move_model_to_device -> model.to(device) ------------------------------------------------

MOVE_PARAMS = ("model", "device")


def move_arguments(call: cst.CSTNode) -> dict[str, cst.Arg] | None:
    if not isinstance(call, cst.Call):
        return None
    bound = bind_args(call, MOVE_PARAMS)
    return bound if bound is not None and "model" in bound else None


@register
class MoveModelToDevice(NxdRule):
    """``move_model_to_device(model, device)`` -> ``model.to(device)``: NxD's helper moved the model and
    kept its parallel layers' partition attributes on the parameters; on TorchNeuron ``Module.to``
    moves it, tied parameters included (DOCS_DISTRIBUTED)."""

    meta = RuleMeta(
        "NM424",
        "move_model_to_device(model, device) -> model.to(device)",
        safety=REVIEW,
        summary="Module.to moves the model; NxD's partition attributes on the parameters are not kept.",
        docs=(DOCS_DISTRIBUTED,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import torch\n"
                "from neuronx_distributed.parallel_layers import move_model_to_device\n\n"
                'device = torch.device("neuron")\n'
                "move_model_to_device(model, device)\n"
            ),
            after=(
                "import torch\n\n"
                'device = torch.device("neuron")\n'
                "# neuron-migrate(NM424): check no code reads NxD partition attributes "
                "(`param.tensor_model_parallel`) after the move\n"
                "model.to(device)\n"
            ),
        ),
    )
    apis = {"move_model_to_device": "move"}

    @classmethod
    def automatic(cls, use: LegacyUse, method: str) -> bool:
        return move_arguments(use.node) is not None

    def move(self, original, updated, use: LegacyUse, api: str):
        if move_arguments(original) is None:
            self.ctx.manual(original, 'move the model with `model.to("neuron")`')
            return updated
        bound = move_arguments(updated)
        device = code_of(bound["device"].value) if "device" in bound else '"neuron"'
        self.ctx.note("move_model_to_device -> Module.to")
        self.ctx.review("check no code reads NxD partition attributes (`param.tensor_model_parallel`) after the move")
        return self.ctx.expr(f"{receiver(bound['model'].value)}.to({device})")


# ----- NM425: pad_model -----------------------------------------------------------------------------

PAD_MODEL = (
    "no padding helper: choose a tensor-parallel size that divides the attention (and KV) heads, or pad the "
    "heads in the model config, before parallelize_module"
)


@register
class PadModel(AdviceRule):
    """``pad_model`` padded attention heads to a multiple of the TP degree; DTensor TP has no such helper
    (DOCS_TP)."""

    meta = RuleMeta(
        "NM425",
        "pad_model -> a tensor-parallel size that divides the heads",
        safety=MANUAL,
        risks=frozenset({"numerics"}),
        summary="There is no head-padding helper: pick a TP size that divides the heads, or pad the config.",
        docs=(DOCS_TP,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from neuronx_distributed.parallel_layers.pad import pad_model\n\n"
                "model = pad_model(model, tp_degree=32, n_heads=40)\n"
            ),
            after=(
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"pad_model in order: {PLAN_SHORT}\n"
                "from neuronx_distributed.parallel_layers.pad import pad_model\n\n"
                f"# TODO(neuron-migrate NM425): {PAD_MODEL}\n"
                "model = pad_model(model, tp_degree=32, n_heads=40)\n"
            ),
        ),
    )
    apis = {"pad_model": "advise"}
    modules = {"pad": "advise"}
    advice = {"pad_model": PAD_MODEL, "pad": PAD_MODEL}


# ----- NM426: checkpoints -> torch.distributed.checkpoint -------------------------------------------

DCP_SAVE = (
    'save with torch.distributed.checkpoint: `dcp.save({"model": model.state_dict(), "optim": optimizer.state_dict()}, '
    "checkpoint_id=path)` on every rank"
)
DCP_LOAD = (
    "load with torch.distributed.checkpoint: `dcp.load(state_dict, checkpoint_id=path)` into `model.state_dict()`, "
    "then `model.load_state_dict(state_dict)`; NxD checkpoints are not readable by it"
)


@register
class CheckpointsToDcp(AdviceRule):
    """NxD's sharded checkpoints (parallel_layers.save/load, trainer save_checkpoint/load_checkpoint) ->
    ``torch.distributed.checkpoint`` (DOCS_DCP), which saves DTensor and FSDP2 shards."""

    meta = RuleMeta(
        "NM426",
        "NxD checkpoints -> torch.distributed.checkpoint",
        safety=MANUAL,
        risks=frozenset({"checkpoint-format"}),
        summary="Sharded checkpoints are written and read with torch.distributed.checkpoint; the NxD format is not.",
        docs=(DOCS_DCP,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import neuronx_distributed as nxd\n\n"
                'nxd.save_checkpoint("ckpt", tag="step_100", model=model, optimizer=optimizer)\n'
            ),
            after=(
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"save_checkpoint in order: {PLAN_SHORT}\n"
                "import neuronx_distributed as nxd\n\n"
                f"# TODO(neuron-migrate NM426): {DCP_SAVE}\n"
                'nxd.save_checkpoint("ckpt", tag="step_100", model=model, optimizer=optimizer)\n'
            ),
        ),
    )
    apis = {
        "save_checkpoint": "advise",
        "load_checkpoint": "advise",
        "parallel_layers.save": "advise",
        "parallel_layers.load": "advise",
        "checkpointing.save": "advise",
        "checkpointing.load": "advise",
    }
    modules = {"checkpointing": "advise"}
    advice = {
        "save_checkpoint": DCP_SAVE,
        "load_checkpoint": DCP_LOAD,
        "parallel_layers.save": DCP_SAVE,
        "parallel_layers.load": DCP_LOAD,
        "checkpointing.save": DCP_SAVE,
        "checkpointing.load": DCP_LOAD,
        "checkpointing": "checkpoints go through torch.distributed.checkpoint (`dcp.save` / `dcp.load`)",
    }


# ----- NM427: pipeline -> torch.distributed.pipelining ------------------------------------------------

PIPELINE = (
    "split the model into stages with torch.distributed.pipelining (`pipeline(...)` or one `PipelineStage` per "
    "rank) and run it with a schedule such as `ScheduleGPipe(stage, n_microbatches, loss_fn=...)`"
)


@register
class PipelineToTorchPipelining(AdviceRule):
    """``NxDPPModel`` -> ``torch.distributed.pipelining`` stages and schedules (DOCS_PIPELINING), which
    the Neuron distributed guide lists as supported."""

    meta = RuleMeta(
        "NM427",
        "NxDPPModel -> torch.distributed.pipelining",
        safety=MANUAL,
        risks=frozenset({"collectives", "performance"}),
        summary="Pipeline parallelism is torch.distributed.pipelining: PipelineStage plus a schedule.",
        docs=(DOCS_PIPELINING, DOCS_DISTRIBUTED),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from neuronx_distributed.pipeline import NxDPPModel\n\n"
                "model = NxDPPModel(model, transformer_layer_cls=Block, num_microbatches=8)\n"
            ),
            after=(
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"NxDPPModel in order: {PLAN_SHORT}\n"
                "from neuronx_distributed.pipeline import NxDPPModel\n\n"
                f"# TODO(neuron-migrate NM427): {PIPELINE}\n"
                "model = NxDPPModel(model, transformer_layer_cls=Block, num_microbatches=8)\n"
            ),
        ),
    )
    apis = {"NxDPPModel": "advise"}
    modules = {"pipeline": "advise"}
    advice = {"NxDPPModel": PIPELINE, "pipeline": PIPELINE}


# ----- NM428: ZeRO-1 -> FSDP2 ------------------------------------------------------------------------

ZERO1 = (
    'ZeRO-1 becomes FSDP2: `fully_shard(model, mesh=mesh["dp"])`, then a plain `torch.optim.AdamW(model.parameters(), '
    "...)`; FSDP2 shards the optimizer state"
)


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


@register
class Zero1ToFsdp2(AdviceRule):
    """NeuronZero1Optimizer / initialize_parallel_optimizer sharded optimizer state over data-parallel
    ranks; FSDP2 ``fully_shard`` does that and more (DOCS_FSDP2)."""

    meta = RuleMeta(
        "NM428",
        "NeuronZero1Optimizer -> FSDP2 fully_shard",
        safety=MANUAL,
        risks=frozenset({"collectives", "checkpoint-format"}),
        summary="Optimizer-state sharding comes from FSDP2 fully_shard on the data-parallel mesh dimension.",
        docs=(DOCS_FSDP2, DOCS_DISTRIBUTED),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import torch\n"
                "from neuronx_distributed.trainer import initialize_parallel_optimizer\n\n"
                "optimizer = initialize_parallel_optimizer(nxd_config, torch.optim.AdamW, params, lr=1e-4)\n"
            ),
            after=(
                "import torch\n"
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"initialize_parallel_optimizer in order: {PLAN_SHORT}\n"
                "from neuronx_distributed.trainer import initialize_parallel_optimizer\n\n"
                "# TODO(neuron-migrate NM428): after `fully_shard(model, mesh=mesh[\"dp\"])` create the optimizer "
                "directly: `torch.optim.AdamW(params, lr=1e-4)` (FSDP2 shards its state)\n"
                "optimizer = initialize_parallel_optimizer(nxd_config, torch.optim.AdamW, params, lr=1e-4)\n"
            ),
        ),
    )
    apis = {"NeuronZero1Optimizer": "optimizer", "initialize_parallel_optimizer": "optimizer"}
    modules = {"optimizer": "advise"}
    advice = {"optimizer": ZERO1}

    def optimizer(self, original, updated, use: LegacyUse, api: str):
        params, parameters = OPTIMIZER_PARAMS[api]
        bound = bind_args(original, params, other_keywords=True) if isinstance(original, cst.Call) else None
        if not bound or parameters not in bound or "optimizer_class" not in bound:
            self.ctx.manual(original, ZERO1)
            return updated
        options = [
            f"{arg.keyword.value}={code_of(arg.value)}"
            for arg in original.args
            if arg.keyword is not None and arg.keyword.value not in bound and arg.keyword.value not in ZERO1_OPTIONS
        ]
        arguments = ", ".join([code_of(bound[parameters].value), *options])
        created = f"{receiver(bound['optimizer_class'].value)}({arguments})"
        self.ctx.manual(
            original,
            f'after `fully_shard(model, mesh=mesh["dp"])` create the optimizer directly: `{created}` '
            "(FSDP2 shards its state)",
        )
        return updated


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


@register
class TrainerToMeshAndFsdp(AdviceRule):
    """neuronx_distributed_config / initialize_parallel_model -> a DeviceMesh, a ``parallelize_module``
    plan and ``fully_shard`` (DOCS_MESH, DOCS_TP, DOCS_FSDP2)."""

    meta = RuleMeta(
        "NM429",
        "NxD trainer config -> DeviceMesh + parallelize_module + fully_shard",
        safety=MANUAL,
        risks=frozenset({"collectives", "launch"}),
        summary=(
            "The NxD config and parallel-model wrapper become explicit code: a DeviceMesh, a parallelize_module plan "
            "for tensor parallelism and fully_shard for data parallelism."
        ),
        docs=(DOCS_MESH, DOCS_TP, DOCS_FSDP2),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "import neuronx_distributed as nxd\n\n"
                "config = nxd.neuronx_distributed_config(tensor_parallel_size=8, optimizer_config=zero1)\n"
                "model = nxd.initialize_parallel_model(config, build_model, model_config)\n"
            ),
            after=(
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"neuronx_distributed_config, initialize_parallel_model in order: {PLAN_SHORT}\n"
                "import neuronx_distributed as nxd\n\n"
                f"# TODO(neuron-migrate NM429): replace the config with a DeviceMesh: {build_mesh('8')}; "
                f"{CONFIG_PARTS['optimizer_config']}\n"
                "config = nxd.neuronx_distributed_config(tensor_parallel_size=8, optimizer_config=zero1)\n"
                "# TODO(neuron-migrate NM429): build the model yourself (`model = build_model(model_config)`), then "
                '`parallelize_module(model, mesh["tp"], plan)` and `fully_shard(model, mesh=mesh["dp"])`\n'
                "model = nxd.initialize_parallel_model(config, build_model, model_config)\n"
            ),
        ),
    )
    apis = {"neuronx_distributed_config": "config", "initialize_parallel_model": "parallel_model"}
    modules = {"trainer": "advise"}
    advice = {
        "trainer": (
            "NxD trainer helpers are gone: DeviceMesh + parallelize_module / fully_shard, checkpoints with "
            "torch.distributed.checkpoint"
        ),
    }

    def config(self, original, updated, use: LegacyUse, api: str):
        bound = {}
        if isinstance(original, cst.Call):
            bound = bind_args(original, ("tensor_parallel_size", "pipeline_parallel_size"), other_keywords=True) or {}
            passed = {arg.keyword.value for arg in original.args if arg.keyword is not None} | set(bound)
        else:
            passed = set()
        parts = [f"replace the config with a DeviceMesh: {build_mesh(size_code(bound, 'tensor_parallel_size', 'tp'))}"]
        if arg_value(bound, "pipeline_parallel_size", default=1) == 1:
            passed.discard("pipeline_parallel_size")
        parts += list(dict.fromkeys(text for name, text in CONFIG_PARTS.items() if name in passed))
        self.ctx.manual(original, "; ".join(parts))
        return updated

    def parallel_model(self, original, updated, use: LegacyUse, api: str):
        call = original if isinstance(original, cst.Call) else None
        plain = call is not None and len(call.args) >= 2 and all(a.keyword is None and not a.star for a in call.args)
        if not plain:
            self.ctx.manual(original, PARALLEL_MODEL)
            return updated
        model_args = ", ".join(code_of(arg.value) for arg in call.args[2:])
        built = f"model = {receiver(call.args[1].value)}({model_args})"
        if "\n" in built or len(built) > 80:
            built = f"model = {receiver(call.args[1].value)}(...)"
        self.ctx.manual(
            original,
            PARALLEL_MODEL.replace("build the model yourself", f"build the model yourself (`{built}`)", 1),
        )
        return updated


# ----- NM430: LoraConfig -> peft.LoraConfig ---------------------------------------------------------

PEFT_DEFAULTS = {"r": "8", "lora_alpha": "8", "lora_dropout": "0.0", "target_modules": None}
# NxD LoraConfig argument -> the peft spelling, named in the marker when the call uses it.
NXD_LORA_NAMES = {"lora_rank": "r", "lora_bias": "bias", "enable_lora": ""}


def peft_only(call: cst.CSTNode) -> bool:
    """A LoraConfig call written only with arguments that mean the same in peft."""
    if not isinstance(call, cst.Call) or not call.args:
        return False
    return all(arg.keyword is not None and not arg.star and arg.keyword.value in PEFT_DEFAULTS for arg in call.args)


@register
class NxdLoraToPeft(NxdRule):
    """NxD's ``LoraConfig`` -> ``peft.LoraConfig`` (DOCS_PEFT): PEFT runs natively on TorchNeuron. A call
    that uses only r / lora_alpha / lora_dropout / target_modules is renamed; others are marked."""

    meta = RuleMeta(
        "NM430",
        "NxD LoraConfig -> peft.LoraConfig",
        safety=REVIEW,
        risks=frozenset({"numerics"}),
        summary=(
            "LoRA comes from peft: LoraConfig + get_peft_model. Arguments not given take peft's defaults, which "
            "differ from NxD's."
        ),
        docs=(DOCS_PEFT,),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from neuronx_distributed.modules.lora import LoraConfig\n\n"
                'lora = LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "v_proj"])\n'
            ),
            after=(
                "import peft\n\n"
                "# neuron-migrate(NM430): apply it with `peft.get_peft_model(model, config)` (NxD applied it in "
                "initialize_parallel_model); peft default for what is not given: lora_dropout=0.0\n"
                'lora = peft.LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "v_proj"])\n'
            ),
        ),
    )
    apis = {"LoraConfig": "lora_config"}
    modules = {"lora": "other"}

    @classmethod
    def automatic(cls, use: LegacyUse, method: str) -> bool:
        return method == "lora_config" and peft_only(use.node)

    def lora_config(self, original, updated, use: LegacyUse, api: str):
        if not peft_only(original):
            self.ctx.manual(original, self._manual_message(original))
            return updated
        name = self.ctx.require_from_import("peft", "LoraConfig")
        given = {arg.keyword.value for arg in original.args}
        missing = [f"{key}={value}" for key, value in PEFT_DEFAULTS.items() if value and key not in given]
        review = "apply it with `peft.get_peft_model(model, config)` (NxD applied it in initialize_parallel_model)"
        if missing:
            review += f"; peft default for what is not given: {', '.join(missing)}"
        self.ctx.note("NxD LoraConfig -> peft.LoraConfig")
        self.ctx.review(review)
        return updated.with_changes(func=self.ctx.expr(name))

    def other(self, original, updated, use: LegacyUse, api: str):
        self.ctx.manual(original, "use peft: `peft.get_peft_model(model, peft.LoraConfig(...))`")
        return updated

    @staticmethod
    def _manual_message(original) -> str:
        message = (
            "use `peft.LoraConfig(r=..., lora_alpha=..., lora_dropout=..., target_modules=[...])` + `get_peft_model`"
        )
        if isinstance(original, cst.Call):
            used = [arg.keyword.value for arg in original.args if arg.keyword and arg.keyword.value in NXD_LORA_NAMES]
            renames = [f"{name} -> {NXD_LORA_NAMES[name]}" if NXD_LORA_NAMES[name] else f"drop {name}" for name in used]
            if renames:
                message += f" ({', '.join(renames)})"
        return message


# ----- NM431: NxD inference tracing -> torch.compile + DTensor TP ----------------------------------

NXD_INFERENCE = (
    'shard with `parallelize_module(model, mesh["tp"], plan)`, then `torch.compile(model.to("neuron"), '
    'backend="neuron", fullgraph=True)`; for LLM serving use vLLM Neuron'
)
NXD_ARTIFACT = (
    "no compiled artifact to save or load: rebuild, shard and torch.compile the model at start-up "
    "(TORCH_NEURONX_NEFF_CACHE_DIR keeps the compile work)"
)


@register
class NxdInferenceToCompile(AdviceRule):
    """NxD inference (parallel_model_trace/save/load, ModelBuilder, NxDModel) was XLA tracing, which is
    unsupported on Trn2/Trn3 (DOCS_NO_XLA_INFERENCE); TorchNeuron compiles with torch.compile
    (DOCS_COMPILE) on a DTensor-sharded model."""

    meta = RuleMeta(
        "NM431",
        "NxD inference tracing -> torch.compile + DTensor TP",
        safety=MANUAL,
        risks=frozenset({"performance", "checkpoint-format"}),
        summary=(
            "Traced NxD models become a DTensor-sharded model compiled with torch.compile(backend=\"neuron\"); "
            "serving LLMs moves to vLLM Neuron."
        ),
        docs=(DOCS_NO_XLA_INFERENCE, DOCS_COMPILE, DOCS_TP),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from neuronx_distributed.trace import parallel_model_trace\n\n"
                "traced = parallel_model_trace(get_model, example_inputs, tp_degree=2)\n"
            ),
            after=(
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"parallel_model_trace in order: {PLAN_SHORT}\n"
                "from neuronx_distributed.trace import parallel_model_trace\n\n"
                f"# TODO(neuron-migrate NM431): {NXD_INFERENCE}\n"
                "traced = parallel_model_trace(get_model, example_inputs, tp_degree=2)\n"
            ),
        ),
    )
    apis = {
        "parallel_model_trace": "advise",
        "parallel_model_save": "advise",
        "parallel_model_load": "advise",
        "ModelBuilder": "advise",
        "NxDModel": "advise",
    }
    modules = {"trace": "advise"}
    advice = {
        "parallel_model_trace": NXD_INFERENCE,
        "ModelBuilder": NXD_INFERENCE,
        "NxDModel": NXD_INFERENCE,
        "trace": NXD_INFERENCE,
        "parallel_model_save": NXD_ARTIFACT,
        "parallel_model_load": NXD_ARTIFACT,
    }


# ----- NM449: any other NxD name ----------------------------------------------------------------------


@register
class OtherNxdApi(AdviceRule):
    """Every other neuronx_distributed name: a short table of known ones, and for the rest a marker naming
    the module, so no NxD use is left without a next step (DOCS_TRANSITION, DOCS_DISTRIBUTED)."""

    meta = RuleMeta(
        "NM449",
        "other neuronx_distributed API",
        safety=MANUAL,
        risks=frozenset({"collectives"}),
        summary="Other NxD APIs have no drop-in replacement; rebuild them with stock torch.distributed.",
        docs=(DOCS_TRANSITION, DOCS_DISTRIBUTED),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from neuronx_distributed.parallel_layers.grads import clip_grad_norm\n\n"
                "clip_grad_norm(model.parameters(), 1.0)\n"
            ),
            after=(
                "# TODO(neuron-migrate NM420): neuronx_distributed is end-of-support; port this file's "
                f"clip_grad_norm in order: {PLAN_SHORT}\n"
                "from neuronx_distributed.parallel_layers.grads import clip_grad_norm\n\n"
                "# TODO(neuron-migrate NM449): use `torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)`: it "
                "handles DTensor and FSDP2 parameters\n"
                "clip_grad_norm(model.parameters(), 1.0)\n"
            ),
        ),
    )
    apis = {
        "clip_grad_norm": "advise",
        "model_parallel_xla_manual_seed": "advise",
        "apply_activation_checkpointing": "advise",
        "divide": "advise",
        "hardware": "advise",
        "NeuronTensorBoardLogger": "advise",
        "load_balancing_loss_func": "advise",
    }
    modules = {"kernels": "advise", "lightning": "advise"}
    advice = {
        "divide": "use `a // b` (NxD's divide also asserted that b divides a evenly)",
        "hardware": (
            "NxD's hardware enum has no counterpart: compare the platform string (trn1, trn2) where the code "
            "branches on it"
        ),
        "NeuronTensorBoardLogger": "use Lightning's own `TensorBoardLogger(save_dir=...)`",
        "lightning": (
            "neuronx_distributed.lightning adapted PyTorch Lightning to XLA: rebuild its strategy on torch.distributed "
            'with device "neuron", or use a plain training loop'
        ),
        "load_balancing_loss_func": (
            "compute the router's load-balancing loss in plain PyTorch (transformers' Mixtral "
            "`load_balancing_loss_func` is one)"
        ),
        "kernels": (
            'register the NKI kernel as an op with `@torch_neuronx.nki_op("ns::name", mutates_args=())`; '
            "for attention, `F.scaled_dot_product_attention` may do"
        ),
        "clip_grad_norm": (
            "use `torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)`: "
            "it handles DTensor and FSDP2 parameters"
        ),
        "model_parallel_xla_manual_seed": "use `torch.manual_seed(seed)` with the same seed on every rank",
        "apply_activation_checkpointing": (
            "use `apply_activation_checkpointing(model, check_fn=...)` from "
            "torch.distributed.algorithms._checkpoint.checkpoint_wrapper, or `torch.utils.checkpoint.checkpoint`"
        ),
    }

    def generic(self, original, updated, use: LegacyUse, api: str):
        module, _, name = use.qname.rpartition(".")
        self.ctx.manual(
            original,
            f"`{name}` from {module or NXD} has no drop-in replacement: rebuild it with stock PyTorch "
            "(DeviceMesh, DTensor, FSDP2) following the NM420 plan",
        )
        return updated


NXD_RULES: tuple[type[NxdRule], ...] = (
    ParallelStateToDeviceMesh,
    ParallelLayersToTensorParallel,
    ParallelCrossEntropyToLossParallel,
    MoveModelToDevice,
    PadModel,
    CheckpointsToDcp,
    PipelineToTorchPipelining,
    Zero1ToFsdp2,
    TrainerToMeshAndFsdp,
    NxdLoraToPeft,
    NxdInferenceToCompile,
    OtherNxdApi,
)
