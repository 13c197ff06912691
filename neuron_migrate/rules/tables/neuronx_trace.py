"""torch-neuronx's XLA-era APIs with no counterpart (NM403-NM406, NM408) and the other XLA-era parts of
the package (NM409), libneuronxla (NM411): the next step for each."""

from __future__ import annotations

from neuron_migrate.rules.rows import Manual, Row, rows_for_names

DATA_PARALLEL = (
    'one process per NeuronCore: launch with torchrun, `dist.init_process_group("neuron")`, then '
    '`DistributedDataParallel(model.to("neuron"))` (inference: one model copy per process)'
)
ANALYZE = (
    'no analyze step: run the model eagerly on "neuron", then `torch_neuronx.get_fallback_ops()` lists the '
    "ops that ran on the CPU"
)
# The helpers around traced models: what to do instead of each.
TRACED_MODEL_HELPERS = {
    "lazy_load": (
        'no traced model to load lazily: build the model, `.to("neuron")` and torch.compile it; delete this call'
    ),
    "async_load": (
        'no traced model to load: move the model with `model.to("neuron")` before its first call; delete this call'
    ),
    "replace_weights": (
        "weights are ordinary parameters: `model.load_state_dict(new_state_dict)` on the module you compiled"
    ),
    "move_trace_to_device": 'place the model with `model.to(f"neuron:{index}")` before compiling it; delete this call',
    "dynamic_batch": (
        "no dynamic batching: pad every batch to one fixed batch size (each new shape compiles again); "
        "delete this call"
    ),
}
CORE_PLACEMENT = {
    "set_neuron_cores": (
        "choose the core with `torch.neuron.set_device(index)` (or NEURON_RT_VISIBLE_CORES) before moving the "
        'model to "neuron"'
    ),
    "neuron_cores_context": "use `with torch.neuron.device(index):` (or NEURON_RT_VISIBLE_CORES) to choose the core",
    "multicore_context": (
        "one process per NeuronCore: launch with torchrun and call `torch.neuron.set_device(local_rank)` in each"
    ),
}
NKI = (
    'write the kernel with `@nki.jit` and register it as an op with `@torch_neuronx.nki_op("ns::name", '
    "mutates_args=())` (or `torch_neuronx.wrap_nki`)"
)

# Legacy part of torch_neuronx -> what to use instead.
LEGACY_PARTS = {
    "torch_neuronx.xla_impl": 'there is no counterpart: do this with stock PyTorch on device "neuron"',
    "torch_neuronx.experimental": 'there is no counterpart: do this with stock PyTorch on device "neuron"',
    "torch_neuronx.testing": "compare results with `torch.testing.assert_close` against a CPU run",
    "torch_neuronx.pyhlo": (
        'HLO-level code has no counterpart: TorchNeuron compiles through torch.compile(backend="neuron")'
    ),
    "torch_neuronx.proto": (
        "the metadata of a traced model's NEFF has no counterpart: TorchNeuron keeps no traced artifact, "
        "read input and output shapes from the module and its example inputs"
    ),
    "torch_neuronx.utils.get_platform_target": (
        "read the target (trn1, trn2) from NEURON_PLATFORM_TARGET_OVERRIDE or the instance type, unless your "
        "torch-neuronx still ships it"
    ),
    "torch_neuronx.distributed.fsdp_mics": (
        'shard with FSDP2 on the neuron process group: `fully_shard(module, mesh=init_device_mesh("neuron", '
        "(dist.get_world_size(),)))`"
    ),
}

LIBNEURONXLA = {
    "configure_environment": (
        "drop this override: TorchNeuron does not load libneuronxla; compiler flags go in NEURON_CC_FLAGS "
        "and runtime settings in the NEURON_RT_* variables, set before start-up"
    ),
}
LIBNEURONXLA_OTHER = "libneuronxla is the XLA-era Neuron PJRT plugin, which TorchNeuron does not load: delete this use"

ROWS = (
    *rows_for_names(
        "NM403",
        ("torch_neuronx.DataParallel", "torch_neuronx.xla_impl.data_parallel.DataParallel"),
        Manual(DATA_PARALLEL),
    ),
    *rows_for_names("NM404", ("torch_neuronx.analyze", "torch_neuronx.xla_impl.analyze.analyze"), Manual(ANALYZE)),
    *(Row(f"torch_neuronx.{name}", "NM405", Manual(text)) for name, text in TRACED_MODEL_HELPERS.items()),
    *(Row(f"torch_neuronx.experimental.{name}", "NM406", Manual(text)) for name, text in CORE_PLACEMENT.items()),
    *rows_for_names("NM408", ("torch_neuronx.nki_jit", "torch_neuronx.xla_impl.ops.nki_jit"), Manual(NKI)),
    # NM409 answers any use under these parts itself (a LegacyUseRule over LEGACY_MODULES).
    *(Row(f"{part}.*", "NM409", Manual(text)) for part, text in LEGACY_PARTS.items()),
    *(Row(f"libneuronxla.{name}.*", "NM411", Manual(text)) for name, text in LIBNEURONXLA.items()),
)
