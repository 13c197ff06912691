"""torch_xla's distributed APIs a table answers: collectives with no one-line counterpart (NM129),
xm.get_rng_state (NM132), SPMD (NM135), XLA FSDP (NM136) and the TPU Pallas kernels (NM138), each with
the next step."""

from __future__ import annotations

from neuron_migrate.rules.rows import Manual, Row

XM = "torch_xla.core.xla_model"
XR = "torch_xla.runtime"

COLLECTIVE_NEXT_STEPS = {
    f"{XM}.reduce_scatter": (
        "use `dist.reduce_scatter_single(out, input, op=dist.ReduceOp.SUM)` (scatters dim 0 into "
        "world_size parts; move `scatter_dim` to dim 0 first), then `out.mul_(scale)`"
    ),
    f"{XM}.all_to_all": (
        "use `dist.all_to_all_single(output, input)` (splits and concatenates along dim 0; "
        "move split_dimension / concat_dimension to dim 0 first)"
    ),
    f"{XM}.collective_permute": (
        "send and receive with `dist.batch_isend_irecv([dist.P2POp(dist.isend, t, peer), "
        "dist.P2POp(dist.irecv, out, peer)])` for each (source, target) pair"
    ),
    f"{XM}.send": "use `dist.send(tensor, dst=peer_rank)`; xm.send named an XLA channel id, not a peer rank",
    f"{XM}.recv": "use `dist.recv(tensor, src=peer_rank)`; xm.recv named an XLA channel id, not a peer rank",
}
GET_RNG_STATE = (
    "use `torch.neuron.get_rng_state()` (a state tensor, not the int seed xm.get_rng_state returned) "
    "and restore it with `torch.neuron.set_rng_state(state)`"
)

SPMD_MODULES = (
    "torch_xla.distributed.spmd",
    "torch_xla.distributed.spmd.xla_sharding",
    "torch_xla.experimental.xla_sharding",
)
MESH_STEP = (
    'build a DeviceMesh: `init_device_mesh("neuron", mesh_shape, mesh_dim_names=axis_names)` '
    "(torch.distributed.device_mesh) and pass it where the mesh is used"
)
TENSOR_STEP = (
    "shard with DTensor: `distribute_tensor(t, mesh, [Shard(dim)])` on a DeviceMesh from "
    '`init_device_mesh("neuron", ...)`; `dt.full_tensor()` / `dt.to_local()` to read it back'
)
MODULE_STEP = (
    "shard the module with `parallelize_module(model, mesh, {name: ColwiseParallel() | RowwiseParallel()})` "
    '(torch.distributed.tensor.parallel) on `init_device_mesh("neuron", ...)`'
)
GLOBAL_MESH_STEP = (
    'a DeviceMesh is passed, not global: give the mesh from `init_device_mesh("neuron", ...)` to what reads it '
    "(`fully_shard(m, mesh=mesh)`, `parallelize_module(m, mesh, plan)`)"
)
HYBRID_MESH_STEP = (
    'build it with `init_device_mesh("neuron", shape, mesh_dim_names=axis_names)`, each axis the product of its '
    "ici and dcn sizes (`tuple(i * d for i, d in zip(ici_mesh_shape, dcn_mesh_shape))`); torchrun numbers the "
    "ranks host by host"
)
SPMD_NAMES = {
    "Mesh": MESH_STEP,
    "HybridMesh": HYBRID_MESH_STEP,
    "get_1d_mesh": MESH_STEP,
    "set_global_mesh": GLOBAL_MESH_STEP,
    "get_global_mesh": GLOBAL_MESH_STEP,
    "mark_sharding": TENSOR_STEP,
    "clear_sharding": TENSOR_STEP,
    "enable_manual_sharding": TENSOR_STEP,
    "disable_manual_sharding": TENSOR_STEP,
    "wrap_if_sharded": TENSOR_STEP,
    "xla_distribute_tensor": TENSOR_STEP,
    "XLAShardedTensor": TENSOR_STEP,
    "XLAShard": TENSOR_STEP,
    "ShardingSpec": TENSOR_STEP,
    "ShardingType": TENSOR_STEP,
    "xla_distribute_module": MODULE_STEP,
    "auto_policy": MODULE_STEP,
    "XLAPatchedLinear": MODULE_STEP,
    "xla_patched_nn_linear_forward": MODULE_STEP,
    "mark_sharding_with_gradients": TENSOR_STEP,
    "shard_as": TENSOR_STEP,
    "annotate_custom_sharding": TENSOR_STEP,
    "apply_backward_optimization_barrier": (
        "a GSPMD compiler hint with no TorchNeuron counterpart: delete the call once the model is sharded with "
        "DTensor or fully_shard"
    ),
}
# torch_xla's SPMD checkpointing: torch.distributed.checkpoint saves DTensors with its default planners.
SPMD_CHECKPOINT_STEP = (
    "save and load the DTensor state with torch.distributed.checkpoint: `dcp.save(state, checkpoint_id=path)` / "
    "`dcp.load(state, checkpoint_id=path)`, its default planners (no SPMD planner)"
)
SPMD_CHECKPOINT = "torch_xla.experimental.distributed_checkpoint"
SPMD_CHECKPOINT_NAMES = ("SPMDSavePlanner", "SPMDLoadPlanner", "CheckpointManager")
USE_SPMD = (
    "GSPMD has no TorchNeuron equivalent: run one process per NeuronCore with torchrun and shard with DTensor "
    '(`init_device_mesh("neuron", ...)`, `parallelize_module`); then delete this call'
)
IS_SPMD = "there is no SPMD mode on TorchNeuron: treat this as False, shard with DTensor"

FSDP_MODULES = (
    "torch_xla.distributed.fsdp",
    "torch_xla.distributed.fsdp.xla_fully_sharded_data_parallel",
    "torch_xla.distributed.fsdp.checkpoint_consolidation",
    "torch_xla.distributed.fsdp.utils",
    "torch_xla.distributed.fsdp.wrap",
)
WRAP_STEP = (
    'shard with FSDP2: `mesh = init_device_mesh("neuron", (world_size,))`, `fully_shard(block, mesh=mesh)` '
    "for each block, then `fully_shard(model, mesh=mesh)`; create the optimizer after sharding"
)
CONSOLIDATE_STEP = (
    "save with torch.distributed.checkpoint (`dcp.save(model.state_dict(), checkpoint_id=path)`), or a full "
    "state dict via `get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))`"
)
NO_WRAP_POLICY = (
    "FSDP2 has no wrap policy: call `fully_shard(block, mesh=mesh)` on each block the policy chose "
    "(`for m in model.modules(): if isinstance(m, Block): ...`), then on the model"
)
FSDP_NAMES = {
    "XlaFullyShardedDataParallel": WRAP_STEP,
    "transformer_auto_wrap_policy": NO_WRAP_POLICY,
    "size_based_auto_wrap_policy": NO_WRAP_POLICY,
    "lambda_auto_wrap_policy": NO_WRAP_POLICY,
    "always_wrap_policy": NO_WRAP_POLICY,
    "recursive_wrap": NO_WRAP_POLICY,
    "apply_xla_patch_to_nn_linear": "an XLA FSDP workaround for nn.Linear: delete the call, FSDP2 needs none",
    "consolidate_sharded_state_dicts": CONSOLIDATE_STEP,
    "consolidate_sharded_model_checkpoints": CONSOLIDATE_STEP,
    "checkpoint_module": (
        "checkpoint activations with `torch.utils.checkpoint.checkpoint(block, *inputs, use_reentrant=False)` "
        "in the parent's forward"
    ),
}

# SPMD's FSDP (FSDPv2): the same port, without SPMD: one process per core and each rank its own batch.
FSDP_V2 = "torch_xla.experimental.spmd_fully_sharded_data_parallel.SpmdFullyShardedDataParallel"
FSDP_V2_STEP = (
    'shard with FSDP2 on `mesh = init_device_mesh("neuron", (world_size,))`: `fully_shard(block, mesh=mesh)` for '
    "each block, then `fully_shard(model, mesh=mesh)`; create the optimizer after sharding; each torchrun rank "
    "then loads its own slice of the batch (the SPMD batch covered every device)"
)

CUSTOM_KERNEL = "torch_xla.experimental.custom_kernel"
PALLAS_STEP = (
    "a TPU Pallas kernel: port it to NKI (`@nki.jit`, registered with `@torch_neuronx.nki_op`) or compute it with "
    "stock PyTorch ops"
)
PAGED_ATTENTION_STEP = (
    "a TPU paged-attention kernel: gather the pages of each sequence and use "
    "`torch.nn.functional.scaled_dot_product_attention`, or keep a static KV cache "
    '(transformers `cache_implementation="static"`)'
)
CUSTOM_KERNEL_NAMES = {
    "FlashAttention": (
        "call `torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm_scale)` "
        "instead (sm_scale defaulted to 1.0, SDPA's scale to 1/sqrt(head_dim))"
    ),
    "paged_attention": PAGED_ATTENTION_STEP,
    "multi_queries_paged_attention": PAGED_ATTENTION_STEP,
    "ragged_paged_attention": PAGED_ATTENTION_STEP,
    "gmm": (
        "a grouped matmul: `torch.cat([lhs_g @ rhs[g] for g, lhs_g in enumerate(lhs.split(group_sizes.tolist()))])` "
        "(`rhs[g].T` with transpose_rhs)"
    ),
    "tgmm": (
        "a grouped matmul over m: `torch.stack([lhs_g @ rhs_g for lhs_g, rhs_g in zip(lhs.split(sizes, dim=1), "
        "rhs.split(sizes))])` with `sizes = group_sizes.tolist()`"
    ),
    "quantized_matmul_int8": "dequantize (`w.float() * scale`) and use `torch.matmul`, or write an NKI kernel",
    "trace_pallas": PALLAS_STEP,
    "make_kernel_from_pallas": PALLAS_STEP,
}

ROWS = (
    *(Row(name, "NM129", Manual(step)) for name, step in COLLECTIVE_NEXT_STEPS.items()),
    Row(f"{XM}.get_rng_state", "NM132", Manual(GET_RNG_STATE)),
    *(Row(f"{module}.{name}", "NM135", Manual(step)) for module in SPMD_MODULES for name, step in SPMD_NAMES.items()),
    Row(f"{XR}.use_spmd", "NM135", Manual(USE_SPMD)),
    Row(f"{XR}.is_spmd", "NM135", Manual(IS_SPMD)),
    *(Row(f"{SPMD_CHECKPOINT}.{name}", "NM135", Manual(SPMD_CHECKPOINT_STEP)) for name in SPMD_CHECKPOINT_NAMES),
    *(Row(f"{module}.{name}", "NM136", Manual(step)) for module in FSDP_MODULES for name, step in FSDP_NAMES.items()),
    Row(FSDP_V2, "NM136", Manual(FSDP_V2_STEP)),
    *(Row(f"{CUSTOM_KERNEL}.{name}", "NM138", Manual(step)) for name, step in CUSTOM_KERNEL_NAMES.items()),
)
