"""NM514: optimum-cli export neuron replaced by loading the checkpoint"""

from __future__ import annotations

import os

from neuron_migrate.migrate.shell import ShellScript
from neuron_migrate.rules.base import MANUAL, Example, RuleMeta, register
from neuron_migrate.rules.launch_scripts.cli_steps import _cli_words, _option
from neuron_migrate.rules.launch_scripts.common import DOCS_CLI, DOCS_ENV, DOCS_NO_XLA_INFERENCE, ShellRule, _manual
from neuron_migrate.rules.launch_scripts.export_class import (
    CHOICES,
    DIFFUSERS,
    SENTENCE_TRANSFORMERS,
    Loader,
    expand_placeholders,
    export_loader,
)
from neuron_migrate.rules.optimum_diffusers.common import TENSOR_PARALLEL_DENOISER, dtype_keyword

# --auto_cast_type / --torch_dtype -> the torch dtype the load asks for
DTYPES = {
    "bf16": "torch.bfloat16", "fp16": "torch.float16", "tf32": "torch.float32", "fp32": "torch.float32",
    "bfloat16": "torch.bfloat16", "float16": "torch.float16", "float32": "torch.float32",
}  # fmt: skip
# `optimum-cli export neuron` options that take no value.
EXPORT_SWITCHES = frozenset(
    {
        "--dynamic-batch-size", "--dynamic_batch_size", "--disable_neuron_cache", "--disable-neuron-cache",
        "--disable-fast-relayout", "--disable_fast_relayout", "--disable-fallback", "--disable_fallback",
        "--trust-remote-code", "--trust_remote_code", "--inline-weights-neff", "--inline_weights_neff",
        "--output_attentions", "--output_hidden_states", "--do-validation", "--do_validation",
        "--disable-validation", "--disable_validation",
    }
)  # fmt: skip
CAUSAL_LM = "AutoModelForCausalLM"
EXAMPLE = (
    "optimum-cli export neuron --model meta-llama/Llama-3.2-1B --batch_size 1 --sequence_length 512 "
    "--auto_cast_type bf16 llama-neuron/"
)


def export_options(words: list[str]) -> dict[str, str]:
    """The command's options, named without dashes (``--batch-size 1`` -> ``{"batch_size": "1"}``);
    a switch has the value ""."""
    options: dict[str, str] = {}
    for i, word in enumerate(words[3:], start=3):
        if not word.startswith("--"):
            continue
        name, equals, value = word[2:].partition("=")
        if not equals and word not in EXPORT_SWITCHES and i + 1 < len(words):
            value = words[i + 1]
        options[name.replace("-", "_")] = value
    return options


def export_output(words: list[str]) -> str | None:
    last = words[-1] if len(words) > 3 else ""
    before = words[-2] if len(words) > 4 else ""
    takes_it = before.startswith("-") and "=" not in before and before not in EXPORT_SWITCHES
    return None if not last or last.startswith("-") or takes_it else last


def export_step(words: list[str], script_path: str, own_code: str = "") -> str:
    """The TODO for ``optimum-cli export neuron ...``: what loads the model instead, and where from."""
    words = [expand_placeholders(word, own_code) for word in words] if own_code else words
    options = export_options(words)
    model = _option(words, "--model", "-m") or "MODEL"
    output = export_output(words) or ""
    found = export_loader(options, model, output, script_path, own_code)
    dtype = DTYPES.get((options.get("auto_cast_type") or options.get("torch_dtype") or "").lower(), "")
    cores = options.get("tensor_parallel_size") or options.get("num_cores") or ""
    cores = "" if cores == "1" else cores
    parts = ["no ahead-of-time export on TorchNeuron: delete this step and load the checkpoint where it is used"]
    if found is None:
        parts[0] += (
            " with the class of its task (this command names none: optimum-cli asked the Hub): "
            f'{", ".join(CHOICES)}; a transformers model with device_map="neuron", a pipeline with .to("neuron")'
        )
        if cores:
            parts.append(f"tensor parallelism over {cores} NeuronCores: DistributedConfig(tp_size={cores}), torchrun")
    else:
        parts[0] += f": {load_code(found.loader, model, dtype, cores)} ({found.source})"
    parts.append("it compiles on first call and the NEFF cache (TORCH_NEURONX_NEFF_CACHE_DIR) keeps the result")
    parts += shape_notes(found.loader if found else None, options)
    if output:
        parts.append(f"code that loads {output} should load {model} instead")
    if found is None or found.loader.name == CAUSAL_LM:
        parts.append("to serve an LLM use vLLM Neuron")
    return "; ".join(parts)


def load_code(loader: Loader, model: str, dtype: str, cores: str) -> str:
    """The load that replaces the export, as the marker writes it."""
    if loader.library == DIFFUSERS:
        dtype_arg = f", {dtype_keyword()}={dtype}" if dtype else ""
        code = f'{loader.name}.from_pretrained("{model}"{dtype_arg}).to("neuron")'
        if not cores:
            return code
        denoiser = TENSOR_PARALLEL_DENOISER.get(loader.name)
        if denoiser is None and "flux" in model.lower():
            denoiser = TENSOR_PARALLEL_DENOISER["FluxPipeline"]
        if denoiser is None:
            return f"{code}, on one NeuronCore: diffusers has no tensor-parallel plan for its denoiser"
        component, model_class = denoiser
        config = f"ParallelConfig(tensor_parallel_config=TensorParallelConfig(tp_degree={cores}))"
        return (
            f'{code} with {component}={model_class}.from_pretrained("{model}", subfolder="{component}", '
            f"parallel_config={config}) loaded first, under torchrun --nproc_per_node {cores} after "
            'dist.init_process_group("neuron")'
        )
    if loader.library == SENTENCE_TRANSFORMERS:
        kwargs = f', model_kwargs={{"dtype": {dtype}}}' if dtype else ""
        code = f'SentenceTransformer("{model}", device="neuron"{kwargs})'
        if cores:
            code += (
                f'; to keep tensor parallelism over {cores} NeuronCores use AutoModel.from_pretrained("{model}", '
                f"distributed_config=DistributedConfig(tp_size={cores})) under torchrun and pool as its model card says"
            )
        return code
    kwargs = [f'"{model}"']
    kwargs.append(f"distributed_config=DistributedConfig(tp_size={cores})" if cores else 'device_map="neuron"')
    kwargs += [f"dtype={dtype}"] if dtype else []
    code = f"{loader.name}.from_pretrained({', '.join(kwargs)})"
    code += f" under torchrun --nproc_per_node {cores}" if cores else ""
    return code + (f", or {loader.alternative}" if loader.alternative else "")


def shape_notes(loader: Loader | None, options: dict[str, str]) -> list[str]:
    """What the compiled shapes become: the padding or the pipeline arguments to keep."""
    if loader is not None and loader.library == DIFFUSERS:
        shapes = [f"{name}={options[name]}" for name in ("height", "width") if options.get(name)]
        if options.get("batch_size"):
            shapes.append(f"batch {options['batch_size']}")
        return [f"keep {', '.join(shapes)} in every pipe(...) call"] if shapes else []
    length = options.get("sequence_length")
    if not length:
        return []
    if loader is not None and loader.name == CAUSAL_LM:
        return [f'generate with cache_implementation="static" and keep prompt + new tokens within {length}']
    return [f"pad inputs to {length} tokens to keep one compiled shape"]


@register
class OptimumCliExport(ShellRule):
    """``optimum-cli export neuron`` has no TorchNeuron counterpart: the model compiles on first call
    (DOCS_CLI). The marker names the class that loads the model, read from what the project says about
    it (see :mod:`~neuron_migrate.rules.launch_scripts.export_class`)."""

    meta = RuleMeta(
        "NM514",
        "optimum-cli export neuron replaced by loading the checkpoint",
        safety=MANUAL,
        risks=frozenset({"launch", "performance"}),
        summary=(
            "There is no ahead-of-time export: load the Hugging Face checkpoint on the neuron device where it is "
            "used; it compiles on first call and the NEFF cache persists. The class comes from --task, from the "
            "code that loads the exported folder or the model, from a local model's own files or from the model's "
            "name; without any of them the marker lists the choices. LLM serving: vLLM Neuron."
        ),
        docs=(DOCS_CLI, DOCS_NO_XLA_INFERENCE, DOCS_ENV),
        triggers=(b"optimum-cli",),
        kind="shell",
        example=Example(
            before=(
                "optimum-cli export neuron --model meta-llama/Llama-3.2-1B \\\n"
                "    --batch_size 1 --sequence_length 512 --auto_cast_type bf16 llama-neuron/\n"
            ),
            after=(
                "# TODO(neuron-migrate NM514): " + export_step(EXAMPLE.split(), "") + "\n"
                "optimum-cli export neuron --model meta-llama/Llama-3.2-1B \\\n"
                "    --batch_size 1 --sequence_length 512 --auto_cast_type bf16 llama-neuron/\n"
            ),
        ),
    )

    def check(self, script: ShellScript) -> None:
        for command in script.commands:
            words = _cli_words(script, command)
            if len(words) >= 3 and os.path.basename(words[0]) == "optimum-cli" and words[1:3] == ["export", "neuron"]:
                _manual(self, command, export_step(words, script.path, script.python))
