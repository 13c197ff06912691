"""torch_xla's debug modules a table answers: metrics functions and their torch_neuronx.metrics
counterparts (NM160), profiler entry points with the torch.profiler next step (NM161)."""

from __future__ import annotations

from neuron_migrate.rules.rows import Manual, Rename, Row

METRICS_MODULE = "torch_xla.debug.metrics"
NAMES_DIFFER = (
    "counter names differ from XLA's (e.g. CompilationCache.InMemoryHits); "
    "metrics stay empty unless TORCH_NEURONX_METRICS_ENABLED=1"
)

# XLA metrics function -> (TorchNeuron replacement, what a reviewer must check; "" = same meaning).
METRICS = {
    "metrics_report": ("torch_neuronx.metrics.report", NAMES_DIFFER),
    "short_metrics_report": ("torch_neuronx.metrics.report_filtered", NAMES_DIFFER),
    "counter_names": ("torch_neuronx.metrics.get_counter_names", NAMES_DIFFER),
    "counter_value": ("torch_neuronx.metrics.get_counter_value", NAMES_DIFFER),
    "metric_names": ("torch_neuronx.metrics.get_metric_names", NAMES_DIFFER),
    "metric_data": (
        "torch_neuronx.metrics.get_metric_data",
        "returns a dict (accumulator, total_samples, repr), not XLA's tuple; metric names differ",
    ),
    # The C++ binding metrics_report() wraps, called directly by some scripts.
    "torch_xla._XLAC._xla_metrics_report": ("torch_neuronx.metrics.report", NAMES_DIFFER),
    "clear_all": ("torch_neuronx.metrics.clear_all", ""),
    "clear_counters": ("torch_neuronx.metrics.clear_counters", ""),
    "clear_metrics": ("torch_neuronx.metrics.clear_metrics", ""),
    "executed_fallback_ops": (
        "torch_neuronx.get_fallback_ops",
        "lists the ops that ran on CPU by name; XLA reported aten:: counters",
    ),
}

PROFILE = "torch.profiler.profile(...)"
PROFILE_STEPS = f"wrap the steps to trace in `with {PROFILE} as prof:` and open the trace in Neuron Explorer"

# XLA profiler entry point -> the concrete next step.
PROFILER = {
    "start_server": f"TorchNeuron has no profiler server: delete this and {PROFILE_STEPS}",
    "trace": f"no remote capture on TorchNeuron: {PROFILE_STEPS}",
    "trace_detached": f"no remote capture on TorchNeuron: {PROFILE_STEPS}",
    "start_trace": f"{PROFILE_STEPS} (prof.start()/prof.stop() if the steps are not in one block)",
    "stop_trace": "stop the torch.profiler.profile started for the matching start_trace (prof.stop())",
}
PROFILER_MODULE = "torch_xla.debug.profiler"



def _metrics_name(name: str) -> str:
    return name if name.startswith("torch_xla.") else f"{METRICS_MODULE}.{name}"


# start_server needs code (an unused server's line goes); the other entry points are a next step.
ROWS = (
    *(Row(_metrics_name(name), "NM160", Rename(target, review=review)) for name, (target, review) in METRICS.items()),
    *(
        Row(f"{PROFILER_MODULE}.{name}", "NM161", Manual(PROFILER[name]))
        for name in ("trace", "trace_detached", "start_trace", "stop_trace")
    ),
)
