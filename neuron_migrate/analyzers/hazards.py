"""The audit's hazard catalog: one row per kind of finding, shared by the static checks and the
runtime analyzer, so a static warning and the run that confirms it carry the same id and the
same fingerprint.

Ids: NA1xx dynamic shapes, NA2xx data-dependent ops and host syncs, NA3xx custom or likely
unsupported ops, NA4xx CUDA-only code, NA5xx runtime-only evidence (recompilations, graph breaks,
shape signatures, CPU fallback), NA7xx the Trainium recipe of a stock Hugging Face script (what ``rewrite --from
cuda`` adds: NM634-NM636), NA6xx the readiness of the model architectures a project loads (from the
shipped table of readiness cards, ``analyzers/models``). Sources are the TorchNeuron docs on torch.compile and static
shapes, and PyTorch's own op tags.
"""

from __future__ import annotations

from dataclasses import dataclass

from neuron_migrate.report.model import ERROR, INFO, WARNING, fingerprint

DOCS_COMPILE = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-compile.html"
DOCS_EAGER = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html"
DOCS_BREAKS = "https://docs.pytorch.org/docs/stable/compile/programming_model.common_graph_breaks.html"
DOCS_CACHE = "https://huggingface.co/docs/transformers/kv_cache"
DOCS_ACCELERATOR = "https://docs.pytorch.org/docs/stable/accelerator.html"
DOCS_CUSTOM_OPS = "https://docs.pytorch.org/tutorials/advanced/custom_ops_landing_page.html"
DOCS_HF_COMPILE = "https://huggingface.co/docs/transformers/main/en/torch_compile"
DOCS_FINE_TUNING = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/tutorials/tutorial-hf-fine-tuning.html"
DOCS_MODELS = "https://huggingface.co/docs/transformers/main/en/model_doc/auto"


@dataclass(frozen=True)
class Hazard:
    id: str
    title: str
    severity: str
    why: str  # what happens on the native backend
    fix: str  # the concrete change
    docs: tuple[str, ...] = ()


def _h(id, title, severity, why, fix, *docs) -> Hazard:
    return Hazard(id, title, severity, why, fix, tuple(docs))


HAZARDS: dict[str, Hazard] = {
    h.id: h
    for h in (
        # ----- dynamic shapes -----
        _h("NA101", "padding that varies per batch", WARNING,
           "padding to the longest sequence of each batch gives a new shape, so a new compilation, for most batches",
           'pad to a fixed length: padding="max_length", max_length=N (or pad_to_multiple_of=128)', DOCS_COMPILE),
        _h("NA102", "data collator without pad_to_multiple_of", WARNING,
           "the collator pads each batch to its own longest sequence, so shapes vary from batch to batch",
           "pass pad_to_multiple_of=128 (or a fixed max_length) to the collator", DOCS_COMPILE),
        _h("NA103", "generate() without a static KV cache", WARNING,
           "the dynamic cache grows by one token per step: every step is a new shape",
           'pass cache_implementation="static" (or set model.generation_config.cache_implementation = "static")',
           DOCS_CACHE),
        _h("NA104", "torch.compile(dynamic=True)", ERROR,
           "the neuron backend refuses dynamic shapes", "drop dynamic=True (leave it unset or False)", DOCS_COMPILE),
        _h("NA105", "torch.compile mode other than default", WARNING,
           'only mode="default" is honoured on neuron; other modes warn and fall back', "drop the mode= argument",
           DOCS_COMPILE),
        _h("NA106", "TRL packing with the bfd strategy", WARNING,
           "packing_strategy bfd/bfd_split turns padding-free batches on: every batch has a new flattened shape",
           'use packing_strategy="wrapped" or packing=False, with padding_free=False', DOCS_COMPILE),
        _h("NA107", "DataLoader keeps a ragged last batch", INFO,
           "the last, smaller batch of every epoch compiles a graph of its own",
           "pass drop_last=True for training; for evaluation pad the last batch to the batch size", DOCS_COMPILE),
        _h("NA108", "automatic dynamic shapes left on", INFO,
           "after a shape change dynamo tries a dynamic graph, which the neuron backend cannot compile",
           "set torch._dynamo.config.automatic_dynamic_shapes = False once at start-up", DOCS_COMPILE),
        _h("NA109", "shape marked dynamic", ERROR,
           "torch._dynamo.mark_dynamic asks for a dynamic dimension, which the neuron backend refuses",
           "remove mark_dynamic and pad that dimension to fixed buckets", DOCS_COMPILE),
        # ----- data-dependent ops and host syncs -----
        _h("NA201", ".item() in model or step code", WARNING,
           "reads a device value on the host: a sync, and a graph break inside torch.compile",
           "keep the value as a tensor (torch.where, clamp) or read it outside the step", DOCS_BREAKS),
        _h("NA202", ".tolist() / .numpy() in model or step code", WARNING,
           "copies a tensor to the host: a sync, and a graph break inside torch.compile",
           "keep the computation on tensors; convert only for logging, outside the step", DOCS_BREAKS),
        _h("NA203", "nonzero / argwhere: output shape depends on values", WARNING,
           "the output size depends on the data, so the graph cannot have a static shape",
           "use a fixed-size mask (torch.where(cond, x, 0)) or torch.nonzero_static(x, size=N)", DOCS_BREAKS),
        _h("NA204", "torch.unique: output shape depends on values", WARNING,
           "the number of unique values depends on the data", "use a fixed-size formulation (bincount with minlength, a mask)",
           DOCS_BREAKS),
        _h("NA205", "boolean-mask indexing / masked_select", WARNING,
           "selecting with a mask gives a result whose length depends on the data",
           "multiply or torch.where with the mask instead of selecting: x * mask, torch.where(mask, x, 0)", DOCS_BREAKS),
        _h("NA206", "torch.where(cond) with one argument", WARNING,
           "the one-argument form is nonzero(): its output size depends on the data",
           "use the three-argument torch.where(cond, x, y)", DOCS_BREAKS),
        _h("NA207", "repeat_interleave with tensor repeats", WARNING,
           "the output length depends on the values of the repeats tensor",
           "pass output_size= (a static bound) or use a Python int for repeats", DOCS_BREAKS),
        _h("NA208", "Python branch on a tensor value", WARNING,
           "if/while on a tensor reads it on the host: a sync, and a graph break inside torch.compile",
           "use torch.where / torch.cond, or move the check out of the step", DOCS_BREAKS),
        _h("NA209", "print(tensor) in step code", INFO,
           "printing a tensor syncs with the device and ends the fused region of adaptive eager execution",
           "log every N steps, or accumulate on the device and print outside the step", DOCS_EAGER),
        # ----- custom and likely-unsupported ops -----
        _h("NA301", "custom op definition (torch.library)", WARNING,
           "a custom op has no Neuron kernel: it runs on the CPU (with copies) unless you register one",
           "register a Neuron implementation (NKI kernel via torch_neuronx.nki_op) or write it with core ops",
           DOCS_CUSTOM_OPS),
        _h("NA302", "call into a non-core torch.ops namespace", WARNING,
           "ops outside aten/prims have no Neuron kernel unless their library registers one",
           "check the op on neuron (torch_neuronx.get_fallback_ops()) or rewrite it with core ops", DOCS_CUSTOM_OPS),
        _h("NA303", "C++/CUDA extension", ERROR,
           "compiled extensions target the CPU or CUDA, not NeuronCores",
           "replace the kernel with PyTorch ops or an NKI kernel", DOCS_CUSTOM_OPS),
        _h("NA304", "Triton kernel", ERROR,
           "Triton does not target NeuronCores", "rewrite the kernel with PyTorch ops or as an NKI kernel",
           DOCS_CUSTOM_OPS),
        _h("NA305", "torch.jit.script / trace", WARNING,
           "TorchScript is not a compile path on TorchNeuron", 'use torch.compile(model, backend="neuron")',
           DOCS_COMPILE),
        # ----- CUDA-only code -----
        _h("NA401", ".cuda()", ERROR, "moves to a CUDA device, which does not exist on Trainium",
           '.to("neuron") (or .to(torch.accelerator.current_accelerator()))', DOCS_ACCELERATOR),
        _h("NA402", "torch.cuda API", ERROR, "torch.cuda is unavailable on Trainium",
           "use torch.accelerator.* (device_count, synchronize, ...) or torch.neuron.*", DOCS_ACCELERATOR),
        _h("NA403", 'device "cuda"', ERROR, "names a CUDA device", 'use "neuron" (or torch.accelerator.current_accelerator())',
           DOCS_ACCELERATOR),
        _h("NA404", "torch.backends.cudnn setting", INFO, "cuDNN settings have no effect on Trainium",
           "remove it (or guard it with torch.cuda.is_available())", DOCS_ACCELERATOR),
        _h("NA405", "torch.cuda.amp", ERROR, "CUDA autocast and its GradScaler do not apply to neuron",
           'torch.autocast("neuron", dtype=torch.bfloat16); bf16 needs no GradScaler', DOCS_ACCELERATOR),
        _h("NA406", "NCCL-specific setting", ERROR, 'NCCL is CUDA-only; the collective backend on Trainium is "neuron"',
           'init_process_group(backend="neuron") and drop NCCL_* variables', DOCS_ACCELERATOR),
        # ----- the Trainium recipe of a stock Hugging Face script -----
        _h("NA701", "training arguments without torch_compile", WARNING,
           "the Trainer runs the step eagerly: the recipe compiles it, with the neuron backend that TrainingArguments "
           "picks on the neuron device",
           "pass torch_compile=True (rewrite --from cuda adds it)", DOCS_HF_COMPILE, DOCS_FINE_TUNING),
        _h("NA702", "training arguments without bf16", WARNING,
           "the run is fp32 (or fp16, whose loss scaling is unverified on neuron): the recipe trains in bf16 mixed "
           "precision",
           "pass bf16=True instead of fp16=True or nothing (rewrite --from cuda makes the change)", DOCS_FINE_TUNING),
        _h("NA703", "trainer built with threaded weight loading on", INFO,
           "transformers loads weights in threads, which can hang on the neuron device",
           'os.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1") after the imports (rewrite --from cuda adds it)',
           DOCS_FINE_TUNING),
        _h("NA704", "sequence length past the recipe's", INFO,
           "the published Trainium fine-tuning recipe trains at most 2048 tokens a sequence; longer ones cost device "
           "memory and compile time", "check device memory and compile time, or use max_length=2048", DOCS_FINE_TUNING),
        _h("NA705", "TRL's padding default turned off", WARNING,
           'pad_to_multiple_of=None pads each batch to its own length; TRL\'s "auto" pads to a multiple of 128 on the '
           "neuron device, so few shapes compile",
           'drop pad_to_multiple_of=None (TRL\'s "auto" is None on a GPU; rewrite --from cuda drops it)', DOCS_COMPILE),
        # ----- runtime evidence -----
        _h("NA501", "recompilation", WARNING,
           "a compiled function was compiled again for a new input signature (minutes per graph on Trainium)",
           "keep that input's shape, dtype and Python values fixed: pad, bucket or mark them constant", DOCS_COMPILE),
        _h("NA502", "graph break", WARNING,
           "the compiled program is split here; each piece compiles and runs on its own, with a host round trip",
           "remove the construct named in the reason, then compile with fullgraph=True", DOCS_BREAKS),
        _h("NA503", "many input shapes for one compiled function", WARNING,
           "each distinct shape is a separate compilation", "pad to the bucket suggested in the message", DOCS_COMPILE),
        _h("NA504", "data-dependent op executed", WARNING,
           "the op's output depends on tensor values (a host sync or a dynamic shape)",
           "replace it with a fixed-shape formulation", DOCS_BREAKS),
        _h("NA505", "custom op executed", WARNING,
           "an op outside the core namespaces ran: it has no Neuron kernel unless its library registers one",
           "register a Neuron kernel (torch_neuronx.nki_op) or rewrite it with core ops", DOCS_CUSTOM_OPS),
        _h("NA506", "op fell back to the CPU", WARNING,
           "the op has no Neuron kernel: it ran on the CPU with two copies", "rewrite it with supported ops",
           DOCS_EAGER),
        _h("NA507", "the program did not finish", ERROR,
           "the analysed run raised an exception or exited with a non-zero status, so what it did not reach was "
           "not analysed and the program does not run as it is",
           "fix the error at this line (the last frame of your code in the traceback), then audit again", DOCS_EAGER),
        # ----- model architectures (the shipped readiness cards) -----
        _h("NA601", "architecture not ready on neuron", ERROR,
           "the readiness card of this architecture failed a phase (forward, generate with a static cache, or a "
           "compiled training step) on the neuron device",
           "see the card: neuron-migrate audit --model <model_type or config.json>", DOCS_MODELS),
        _h("NA602", "architecture runs on neuron with warnings", WARNING,
           "the readiness card of this architecture ran, with graph breaks, recompiles, host syncs or ops only the "
           "device can judge", "see the card: neuron-migrate audit --model <model_type or config.json>",
           DOCS_MODELS),
        _h("NA603", "architecture unknown offline", INFO,
           "the model is named by a Hub id and no local config.json says its architecture",
           "run neuron-migrate audit --model <config.json> on the model's config", DOCS_MODELS),
    )
}

SEVERITY_ORDER = {INFO: 0, WARNING: 1, ERROR: 2}


def audit_fingerprint(rule: str, path: str, line_text: str, occurrence: int = 0) -> str:
    """Fingerprint of an audit finding: rule, file, the text of the line it points at and which
    copy of that text it is (``report.model.number_findings`` counts them once a file's findings
    are all known), so the static check and the run that observes the same line agree, and moving
    code keeps it."""
    return fingerprint(rule, path, line_text, None, occurrence)


def hazard_dict(hazard: Hazard) -> dict:
    """The same shape as a rewrite rule's catalog entry, so every renderer describes both."""
    return {
        "id": hazard.id,
        "title": hazard.title,
        "safety": "manual",
        "severity": hazard.severity,
        "risks": [],
        "summary": f"{hazard.why}. Fix: {hazard.fix}.",
        "docs": list(hazard.docs),
        "example": None,
    }


def catalog() -> dict[str, dict]:
    return {hazard_id: hazard_dict(hazard) for hazard_id, hazard in HAZARDS.items()}


def selected(rule_id: str, select: tuple[str, ...], ignore: tuple[str, ...]) -> bool:
    """--select / --ignore semantics of the rewrite rules (ids or prefixes), for audit ids."""
    if select and not any(rule_id.startswith(s) or s == "ALL" for s in select):
        return False
    return not any(rule_id.startswith(s) for s in ignore)
