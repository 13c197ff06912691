"""neuronx_distributed (NM421-NM449): the NxD names whose next step is a fixed text.

NxD exports one API from several module paths (``parallel_layers.save`` is also
``parallel_layers.checkpointing.save``), so its rows name an API wherever it sits in the package:
``neuronx_distributed.**.clip_grad_norm`` answers ``clip_grad_norm`` under any module (and the names under
it), ``neuronx_distributed.**.checkpointing.save`` a name too common to match alone, and
``neuronx_distributed.**.kernels.*`` every other name of a module called ``kernels``. One owner is
chosen for a use across all NxD rules (``rules/neuronx_distributed/common.py``, ``owner``): a name
before a module, the part nearest the end of the path first. The names whose answer needs code (a
marker built from the call's arguments, an actual rewrite) are the rules' ``apis`` / ``modules``.
"""

from __future__ import annotations

from neuron_migrate.rules.rows import Manual, Row

NXD = "neuronx_distributed"

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
PIPELINE_STAGE = "pipeline stages come from torch.distributed.pipelining (the stage index of your PipelineStage)"
PARALLEL_STATE = (
    'parallel_state is gone: derive ranks, sizes and groups from the DeviceMesh (`mesh["tp"]`, `mesh["dp"]`)'
)
# ----- NM422: parallel layers -> nn layers + parallelize_module --------------------------------------

COLLECTIVES = (
    'the parallelize_module plan places these collectives; an explicit one is `dist.all_reduce(x, group=mesh["tp"]'
    ".get_group())`"
)
STOCK_LAYERS = 'use the stock torch.nn layer and shard it with a parallelize_module plan on `mesh["tp"]`'
# ----- NM425: pad_model -----------------------------------------------------------------------------

PAD_MODEL = (
    "no padding helper: choose a tensor-parallel size that divides the attention (and KV) heads, or pad the "
    "heads in the model config, before parallelize_module"
)
# ----- NM426: checkpoints -> torch.distributed.checkpoint -------------------------------------------

DCP_SAVE = (
    'save with torch.distributed.checkpoint: `dcp.save({"model": model.state_dict(), "optim": optimizer.state_dict()}, '
    "checkpoint_id=path)` on every rank"
)
DCP_LOAD = (
    "load with torch.distributed.checkpoint: `dcp.load(state_dict, checkpoint_id=path)` into `model.state_dict()`, "
    "then `model.load_state_dict(state_dict)`; NxD checkpoints are not readable by it"
)
CHECKPOINTS = {
    "save_checkpoint": DCP_SAVE,
    "load_checkpoint": DCP_LOAD,
    "parallel_layers.save": DCP_SAVE,
    "parallel_layers.load": DCP_LOAD,
    "checkpointing.save": DCP_SAVE,
    "checkpointing.load": DCP_LOAD,
}
DCP = "checkpoints go through torch.distributed.checkpoint (`dcp.save` / `dcp.load`)"
# ----- NM427: pipeline -> torch.distributed.pipelining ------------------------------------------------

PIPELINE = (
    "split the model into stages with torch.distributed.pipelining (`pipeline(...)` or one `PipelineStage` per "
    "rank) and run it with a schedule such as `ScheduleGPipe(stage, n_microbatches, loss_fn=...)`"
)
# ----- NM428: ZeRO-1 -> FSDP2 ------------------------------------------------------------------------

ZERO1 = (
    'ZeRO-1 becomes FSDP2: `fully_shard(model, mesh=mesh["dp"])`, then a plain `torch.optim.AdamW(model.parameters(), '
    "...)`; FSDP2 shards the optimizer state"
)
# ----- NM429: trainer helpers --------------------------------------------------------------------------

TRAINER = (
    "NxD trainer helpers are gone: DeviceMesh + parallelize_module / fully_shard, checkpoints with "
    "torch.distributed.checkpoint"
)
# ----- NM430: LoRA --------------------------------------------------------------------------------------

PEFT = "use peft: `peft.get_peft_model(model, peft.LoraConfig(...))`"
# ----- NM431: NxD inference tracing -> torch.compile + DTensor TP ----------------------------------

NXD_INFERENCE = (
    'shard with `parallelize_module(model, mesh["tp"], plan)`, then `torch.compile(model.to("neuron"), '
    'backend="neuron", fullgraph=True)`; for LLM serving use vLLM Neuron'
)
NXD_ARTIFACT = (
    "no compiled artifact to save or load: rebuild, shard and torch.compile the model at start-up "
    "(TORCH_NEURONX_NEFF_CACHE_DIR keeps the compile work)"
)
INFERENCE = {
    "parallel_model_trace": NXD_INFERENCE,
    "parallel_model_save": NXD_ARTIFACT,
    "parallel_model_load": NXD_ARTIFACT,
    "ModelBuilder": NXD_INFERENCE,
    "NxDModel": NXD_INFERENCE,
}
# ----- NM449: the other NxD names with a known next step -------------------------------------------

OTHER_APIS = {
    "clip_grad_norm": (
        "use `torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)`: it handles DTensor and FSDP2 parameters"
    ),
    "model_parallel_xla_manual_seed": "use `torch.manual_seed(seed)` with the same seed on every rank",
    "apply_activation_checkpointing": (
        "use `apply_activation_checkpointing(model, check_fn=...)` from "
        "torch.distributed.algorithms._checkpoint.checkpoint_wrapper, or `torch.utils.checkpoint.checkpoint`"
    ),
    "divide": "use `a // b` (NxD's divide also asserted that b divides a evenly)",
    "hardware": (
        "NxD's hardware enum has no counterpart: compare the platform string (trn1, trn2) where the code branches on it"
    ),
    "NeuronTensorBoardLogger": "use Lightning's own `TensorBoardLogger(save_dir=...)`",
    "load_balancing_loss_func": (
        "compute the router's load-balancing loss in plain PyTorch (transformers' Mixtral `load_balancing_loss_func` "
        "is one)"
    ),
}
OTHER_MODULES = {
    "kernels": (
        'register the NKI kernel as an op with `@torch_neuronx.nki_op("ns::name", mutates_args=())`; '
        "for attention, `F.scaled_dot_product_attention` may do"
    ),
    "lightning": (
        "neuronx_distributed.lightning adapted PyTorch Lightning to XLA: rebuild its strategy on torch.distributed "
        'with device "neuron", or use a plain training loop'
    ),
}


def api(name: str, rule: str, step: str) -> Row:
    """``name`` (an API, or ``module.api`` where the API alone is too common) under any module of NxD."""
    return Row(f"{NXD}.**.{name}", rule, Manual(step))


def module(name: str, rule: str, step: str) -> Row:
    """Every name of a module called ``name`` that no row or rule answers by its own name."""
    return Row(f"{NXD}.**.{name}.*", rule, Manual(step))


ROWS = (
    *(api(name, "NM421", step) for name, step in MESH_QUERIES.items()),
    *(api(name, "NM421", PIPELINE_STAGE) for name in PIPELINE_QUERIES),
    module("parallel_state", "NM421", PARALLEL_STATE),
    module("mappings", "NM422", COLLECTIVES),
    module("layers", "NM422", STOCK_LAYERS),
    api("pad_model", "NM425", PAD_MODEL),
    module("pad", "NM425", PAD_MODEL),
    *(api(name, "NM426", step) for name, step in CHECKPOINTS.items()),
    module("checkpointing", "NM426", DCP),
    api("NxDPPModel", "NM427", PIPELINE),
    module("pipeline", "NM427", PIPELINE),
    module("optimizer", "NM428", ZERO1),
    module("trainer", "NM429", TRAINER),
    module("lora", "NM430", PEFT),
    *(api(name, "NM431", step) for name, step in INFERENCE.items()),
    module("trace", "NM431", NXD_INFERENCE),
    *(api(name, "NM449", step) for name, step in OTHER_APIS.items()),
    *(module(name, "NM449", step) for name, step in OTHER_MODULES.items()),
)
