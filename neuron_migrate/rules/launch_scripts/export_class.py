"""Which class loads what ``optimum-cli export neuron`` exported, once there is nothing to export.

The command names a model and, optionally, its task. Without ``--task`` optimum asks the Hugging Face
Hub for the model's pipeline tag (``TasksManager.infer_task_from_model``; a local folder has none and
the export fails), so nothing on the command line says what the model is. The class is read, in this
order, from: the task; options only one kind of model takes; the code of the project (or of the
notebook) that loads the exported folder or the same model; the model's own files when ``--model`` is
a local folder; the model's name. When none of them says, the marker lists the classes to choose from.

Reading the project means reading files next to the script, as the launch rules read the script a
launcher runs (see ``common.script_source``).
"""

from __future__ import annotations

import ast
import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache

from neuron_migrate.rules.launch_scripts.launchers import read_source
from neuron_migrate.rules.optimum_diffusers.common import PIPELINES
from neuron_migrate.rules.optimum_inference.common import TASK_MODELS

TRANSFORMERS, DIFFUSERS, SENTENCE_TRANSFORMERS = "transformers", "diffusers", "sentence_transformers"


@dataclass(frozen=True)
class Loader:
    """A class that loads a checkpoint: its library, its name, and another class for some models of
    the same task, with which (``AutoModelForCTC for a CTC model`` next to ``AutoModelForSpeechSeq2Seq``)."""

    library: str
    name: str
    alternative: str = ""


def _transformers(name: str, alternative: str = "") -> Loader:
    return Loader(TRANSFORMERS, name, alternative)


def _diffusers(name: str) -> Loader:
    return Loader(DIFFUSERS, name)


SENTENCE_TRANSFORMER = Loader(SENTENCE_TRANSFORMERS, "SentenceTransformer")
EMBEDDINGS = "SentenceTransformer for a sentence-transformers model"
# optimum's task names (TasksManager: transformers and diffusers loaders) -> the class that loads the model
TASK_LOADERS = {
    "audio-classification": _transformers("AutoModelForAudioClassification"),
    "audio-frame-classification": _transformers("AutoModelForAudioFrameClassification"),
    "audio-xvector": _transformers("AutoModelForAudioXVector"),
    "automatic-speech-recognition": _transformers("AutoModelForSpeechSeq2Seq", "AutoModelForCTC for a CTC model"),
    "depth-estimation": _transformers("AutoModelForDepthEstimation"),
    "feature-extraction": _transformers("AutoModel", EMBEDDINGS),
    "fill-mask": _transformers("AutoModelForMaskedLM"),
    "image-classification": _transformers("AutoModelForImageClassification"),
    "image-segmentation": _transformers(
        "AutoModelForImageSegmentation", "AutoModelForSemanticSegmentation for semantic segmentation"
    ),
    "image-to-text": _transformers("AutoModelForImageTextToText"),
    "masked-im": _transformers("AutoModelForMaskedImageModeling"),
    "multiple-choice": _transformers("AutoModelForMultipleChoice"),
    "object-detection": _transformers("AutoModelForObjectDetection"),
    "question-answering": _transformers("AutoModelForQuestionAnswering"),
    "semantic-segmentation": _transformers("AutoModelForSemanticSegmentation"),
    "text-to-audio": _transformers(
        "AutoModelForTextToWaveform", "AutoModelForTextToSpectrogram for a spectrogram model"
    ),
    "text-generation": _transformers("AutoModelForCausalLM"),
    "text2text-generation": _transformers("AutoModelForSeq2SeqLM"),
    "text-classification": _transformers("AutoModelForSequenceClassification"),
    "token-classification": _transformers("AutoModelForTokenClassification"),
    "visual-question-answering": _transformers("AutoModelForVisualQuestionAnswering"),
    "zero-shot-image-classification": _transformers("AutoModelForZeroShotImageClassification"),
    "zero-shot-object-detection": _transformers("AutoModelForZeroShotObjectDetection"),
    # DiffusionPipeline loads the class the model's model_index.json names
    "text-to-image": _diffusers("DiffusionPipeline"),
    "image-to-image": _diffusers("AutoPipelineForImage2Image"),
    "inpainting": _diffusers("AutoPipelineForInpainting"),
}
TASK_SYNONYMS = {
    "audio-ctc": "automatic-speech-recognition",
    "causal-lm": "text-generation",
    "default": "feature-extraction",
    "masked-lm": "fill-mask",
    "mask-generation": "feature-extraction",
    "sentence-similarity": "feature-extraction",
    "seq2seq-lm": "text2text-generation",
    "sequence-classification": "text-classification",
    "speech2seq-lm": "automatic-speech-recognition",
    "summarization": "text2text-generation",
    "text-to-speech": "text-to-audio",
    "translation": "text2text-generation",
    "vision2seq-lm": "image-to-text",
    "zero-shot-classification": "text-classification",
    "image-feature-extraction": "feature-extraction",
    "pretraining": "feature-extraction",
    "stable-diffusion": "text-to-image",
    "stable-diffusion-xl": "text-to-image",
    "latent-consistency": "text-to-image",
    "inpaint": "inpainting",
}
# Export options only diffusion pipelines take (adapters compiled in, images per prompt).
DIFFUSION_OPTIONS = frozenset(
    {
        "unet", "lora_model_ids", "lora_weight_names", "lora_adapter_names", "lora_scales", "controlnet_ids",
        "ip_adapter_id", "ip_adapter_subfolder", "ip_adapter_weight_name", "ip_adapter_scale",
        "num_images_per_prompt",
    }
)  # fmt: skip
# Model names -> the class their family loads with (checked in order; a fine-tune keeps its base's name).
NAMED_FAMILIES = (
    (r"stable-diffusion-3|\bsd3", _diffusers("StableDiffusion3Pipeline")),
    (r"stable-diffusion-xl|sdxl", _diffusers("StableDiffusionXLPipeline")),
    (r"stable-diffusion", _diffusers("StableDiffusionPipeline")),
    (r"flux\.1-kontext", _diffusers("FluxKontextPipeline")),
    (r"\bflux", _diffusers("FluxPipeline")),
    (r"pixart-sigma", _diffusers("PixArtSigmaPipeline")),
    (r"pixart", _diffusers("PixArtAlphaPipeline")),
    (r"latent-consistency|\blcm", _diffusers("DiffusionPipeline")),
    (r"^sentence-transformers/|\bbge-|\be5-|\bgte-|embedding|minilm", SENTENCE_TRANSFORMER),
    (r"whisper", _transformers("AutoModelForSpeechSeq2Seq")),
    (r"wav2vec2|hubert", _transformers("AutoModelForCTC")),
    (r"\bt5|\bbart|pegasus|marian|opus-mt", _transformers("AutoModelForSeq2SeqLM")),
    (r"squad", _transformers("AutoModelForQuestionAnswering")),
    (r"sst-?2|sentiment|emotion|mnli|\bnli\b|toxic|classifier", _transformers("AutoModelForSequenceClassification")),
    (r"\bner\b|conll", _transformers("AutoModelForTokenClassification")),
    (r"\byolos|\bdetr", _transformers("AutoModelForObjectDetection")),
    (
        r"\bvit\b|vit-|convnext|resnet|\bdeit|\bswin|levit|mobilevit|beit",
        _transformers("AutoModelForImageClassification"),
    ),
    (
        r"llama|mistral|mixtral|qwen|gemma|\bphi|falcon|\bopt-|gpt|granite|olmo|smollm|tinyllama|starcoder|"
        r"deepseek|\bgranite|zephyr|vicuna|bloom",
        _transformers("AutoModelForCausalLM"),
    ),
)
# config.json architectures: the ending of the class name -> the Auto class that loads it
ARCHITECTURE_ENDINGS = (
    ("ForCausalLM", "AutoModelForCausalLM"),
    ("ForSequenceClassification", "AutoModelForSequenceClassification"),
    ("ForTokenClassification", "AutoModelForTokenClassification"),
    ("ForQuestionAnswering", "AutoModelForQuestionAnswering"),
    ("ForMaskedLM", "AutoModelForMaskedLM"),
    ("ForMultipleChoice", "AutoModelForMultipleChoice"),
    ("ForImageClassification", "AutoModelForImageClassification"),
    ("ForSemanticSegmentation", "AutoModelForSemanticSegmentation"),
    ("ForObjectDetection", "AutoModelForObjectDetection"),
    ("ForCTC", "AutoModelForCTC"),
    ("ForAudioClassification", "AutoModelForAudioClassification"),
)
# The choices the marker lists when nothing says which class it is.
CHOICES = (
    "AutoModelForCausalLM (text generation)",
    "AutoModelForSequenceClassification / AutoModelForTokenClassification / AutoModelForQuestionAnswering",
    "AutoModelForSeq2SeqLM",
    "AutoModelForSpeechSeq2Seq (Whisper)",
    "SentenceTransformer or AutoModel (embeddings)",
    "AutoModelForImageClassification",
    "a diffusers pipeline such as DiffusionPipeline (Stable Diffusion, SDXL, Flux)",
)

# ----- what code loads the exported folder with -------------------------------------------------------

# optimum-neuron class -> the class its migration loads with
OPTIMUM_CLASSES = {
    "NeuronModelForCausalLM": _transformers("AutoModelForCausalLM"),
    "NeuronModelForEmbedding": _transformers("AutoModel", EMBEDDINGS),
    "NeuronModelForSentenceTransformers": SENTENCE_TRANSFORMER,
    "NeuronSentenceTransformers": SENTENCE_TRANSFORMER,
    **{name: _transformers(target) for name, (target, _) in TASK_MODELS.items()},
    **{name: _diffusers(target) for name, target in PIPELINES.items()},
}
FACTORY_MODEL_ARGUMENT = {"pipeline": (1, "model"), "SentenceTransformer": (0, "model_name_or_path")}
MODEL_KEYWORDS = ("pretrained_model_name_or_path", "model_id", "model_name_or_path")
# What a SageMaker inference handler loads: the model it was deployed with, an export's output packaged.
MODEL_FN = "model_fn(model_dir)"
# How far from the script the project's code is read.
MAX_FILES = 200
MAX_DEPTH = 2
SKIPPED_FOLDERS = frozenset({".git", "node_modules", "__pycache__", "venv", ".venv", "env", "site-packages"})


@dataclass(frozen=True)
class Found:
    """The class for an export, and what said so (for the marker)."""

    loader: Loader
    source: str


def task_loader(task: str) -> Loader | None:
    task = task.removesuffix("-with-past")
    return TASK_LOADERS.get(TASK_SYNONYMS.get(task, task))


def named_loader(model: str) -> Loader | None:
    name = model.lower()
    for pattern, loader in NAMED_FAMILIES:
        if re.search(pattern, name):
            return loader
    return None


def loader_of_class(name: str, module: str) -> Loader | None:
    """The loader a class of ``module`` stands for (an optimum-neuron class: its migration's)."""
    root = module.split(".")[0]
    if root == "optimum":
        return OPTIMUM_CLASSES.get(name)
    if root == TRANSFORMERS and (name.startswith("AutoModel") or "For" in name or name.endswith("Model")):
        return _transformers(name)
    if root == DIFFUSERS and "Pipeline" in name:
        return _diffusers(name)
    if root == SENTENCE_TRANSFORMERS and name == "SentenceTransformer":
        return SENTENCE_TRANSFORMER
    return None


# ----- the model's own files ------------------------------------------------------------------------


def local_loader(folder: str) -> Found | None:
    """The class a local model folder's own files name (diffusers' model_index.json, a
    sentence-transformers config, config.json's architecture)."""
    index = _json(os.path.join(folder, "model_index.json"))
    if isinstance(index, dict) and isinstance(index.get("_class_name"), str):
        return Found(_diffusers(index["_class_name"]), f"its model_index.json names {index['_class_name']}")
    if any(os.path.isfile(os.path.join(folder, f)) for f in ("config_sentence_transformers.json", "modules.json")):
        return Found(SENTENCE_TRANSFORMER, "it is a sentence-transformers model")
    config = _json(os.path.join(folder, "config.json"))
    architectures = config.get("architectures") if isinstance(config, dict) else None
    if not architectures or not isinstance(architectures[0], str):
        return None
    architecture = architectures[0]
    named = f"its config.json names {architecture}"
    for ending, auto in ARCHITECTURE_ENDINGS:
        if architecture.endswith(ending):
            return Found(_transformers(auto), named)
    return Found(_transformers(architecture), named)


def _json(path: str):
    text = read_source(path)
    try:
        return json.loads(text) if text is not None else None
    except ValueError:
        return None


# ----- the project's code ----------------------------------------------------------------------------


def project_sources(script_path: str) -> list[tuple[str, str]]:
    """(path, Python code) of the project's Python files and notebooks: the folder of the script and
    the two levels below it (the script itself included when it is a notebook). A script that is not
    a file (read from stdin) has no project."""
    if not os.path.isfile(script_path):
        return []
    found: list[tuple[str, str]] = []
    for path in _project_files(os.path.dirname(os.path.abspath(script_path))):
        text = read_source(path)
        if text is None:
            continue
        code = notebook_code(text) if path.endswith(".ipynb") else text
        if code:
            found.append((path, code))
    return found


@lru_cache(maxsize=16)
def _project_files(folder: str) -> tuple[str, ...]:
    paths: list[str] = []
    depth = folder.rstrip(os.sep).count(os.sep)
    for root, dirs, files in os.walk(folder):
        if root.rstrip(os.sep).count(os.sep) - depth >= MAX_DEPTH:
            dirs[:] = []
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS and not d.startswith("."))
        paths += [os.path.join(root, f) for f in sorted(files) if f.endswith((".py", ".ipynb"))]
        if len(paths) >= MAX_FILES:
            break
    return tuple(paths[:MAX_FILES])


def notebook_code(text: str) -> str:
    """A notebook's code cells as one module: IPython lines (``!cmd``, ``%magic``) blanked, a
    ``%%writefile x.py`` cell kept as the Python it writes, other cell magics left out."""
    try:
        cells = json.loads(text).get("cells", [])
    except (ValueError, AttributeError):
        return ""
    parts = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        lines = ("".join(source) if isinstance(source, list) else str(source)).splitlines()
        if lines and lines[0].startswith("%%"):
            if not re.match(r"%%writefile\s+\S+\.py\b", lines[0]):
                continue
            lines = lines[1:]
        parts.append("\n".join("" if line.lstrip().startswith(("!", "%")) else line for line in lines))
    return "\n".join(parts)


def code_loader(sources: list[tuple[str, str]], wanted: dict[str, str]) -> Found | None:
    """The class the project's code (where it is, its code) loads one of ``wanted`` (normalised path
    or id -> how the marker names it) with: the first loading call whose model argument is one of them."""
    for where, code in sources:
        if not any(key.rsplit("/", 1)[-1].removesuffix("(model_dir)") in code for key in wanted):
            continue
        for loader, value, written in _loading_calls(code):
            key = _normalised(value)
            if key in wanted:
                return Found(loader, f"{where} loads {wanted[key]} with {written}")
    return None


def _normalised(path: str) -> str:
    path = path.strip()
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip("/") or path


def _loading_calls(code: str) -> list[tuple[Loader, str, str]]:
    """(loader, model argument, the loader as the code writes it) of every loading call of ``code``."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    imports, strings = _bindings(tree)
    handed = _handed_model_dirs(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        loader, argument, written = _loader_call(node, imports)
        if loader is None or argument is None:
            continue
        value = MODEL_FN if id(argument) in handed else _string(argument, strings)
        if value is not None:
            found.append((loader, value, written))
    return found


def _handed_model_dirs(tree: ast.Module) -> set[int]:
    """id of every use of a SageMaker ``model_fn(model_dir)`` handler's parameter inside it: the
    folder SageMaker unpacks the model into (an export's output, packaged)."""
    uses: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "model_fn" and node.args.args:
            name = node.args.args[0].arg
            uses.update(id(n) for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name)
    return uses


def _bindings(tree: ast.Module) -> tuple[dict[str, tuple[str, str]], dict[str, ast.expr | None]]:
    """Names bound by imports (name -> (module, imported name)) and names assigned once (-> value)."""
    imports: dict[str, tuple[str, str]] = {}
    strings: dict[str, ast.expr | None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                imports[alias.asname or alias.name] = (node.module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                # `import a.b as x` binds x to a.b; `import a.b` binds a
                bound = alias.asname or alias.name.split(".")[0]
                imports[bound] = (alias.name if alias.asname else bound, "")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    strings[target.id] = None if target.id in strings else node.value
    return imports, strings


def _qualified(expr: ast.expr, imports) -> tuple[str, str] | None:
    """(module, name) of a class or function written as ``Name`` or ``module.Name``."""
    if isinstance(expr, ast.Name) and expr.id in imports:
        module, name = imports[expr.id]
        return (module, name) if name else None
    if isinstance(expr, ast.Attribute):
        parts = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        if isinstance(expr, ast.Name) and expr.id in imports:
            module, name = imports[expr.id]
            dotted = ".".join([module, *([name] if name else []), *reversed(parts)])
            return dotted.rsplit(".", 1)[0], dotted.rsplit(".", 1)[1]
    return None


def _loader_call(call: ast.Call, imports) -> tuple[Loader | None, ast.expr | None, str]:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "from_pretrained":
        owner = _qualified(func.value, imports)
        if owner is None:
            return None, None, ""
        return loader_of_class(owner[1], owner[0]), _argument(call, 0, MODEL_KEYWORDS), owner[1]
    named = _qualified(func, imports)
    if named is None or named[1] not in FACTORY_MODEL_ARGUMENT:
        return None, None, ""
    position, keyword = FACTORY_MODEL_ARGUMENT[named[1]]
    if named[1] == "SentenceTransformer":
        return loader_of_class(named[1], named[0]), _argument(call, position, (keyword,)), named[1]
    task = _argument(call, 0, ("task",))
    if named[0].split(".")[0] not in (TRANSFORMERS, "optimum") or not isinstance(task, ast.Constant):
        return None, None, ""
    loader = task_loader(task.value) if isinstance(task.value, str) else None
    return loader, _argument(call, position, (keyword,)), f'pipeline("{task.value}")'


def _argument(call: ast.Call, position: int, keywords: tuple[str, ...]) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg in keywords:
            return keyword.value
    positional = [arg for arg in call.args if not isinstance(arg, ast.Starred)]
    return positional[position] if len(positional) > position else None


def _string(expr: ast.expr, strings, hops: int = 3) -> str | None:
    """The string ``expr`` is: a literal, or a name assigned once to one (through a few names)."""
    while isinstance(expr, ast.Name) and hops and strings.get(expr.id) is not None:
        expr, hops = strings[expr.id], hops - 1
    return expr.value if isinstance(expr, ast.Constant) and isinstance(expr.value, str) else None


# ----- the decision --------------------------------------------------------------------------------------


def export_loader(
    options: dict[str, str], model: str, output: str, script_path: str, own_code: str = ""
) -> Found | None:
    """The class that loads the model of an export with these ``options`` (name -> value, the
    leading dashes gone and dashes as underscores), or None when nothing says. ``own_code`` is the
    Python that runs next to the command (a notebook's cells)."""
    task = options.get("task", "auto")
    if task != "auto":
        loader = task_loader(task)
        return Found(loader, f"--task {task}") if loader is not None else None
    named = named_loader(model) if _spelled_out(model) else None
    if set(options) & DIFFUSION_OPTIONS:
        loader = named if named is not None and named.library == DIFFUSERS else _diffusers("DiffusionPipeline")
        return Found(loader, "it takes diffusion-only options")
    if "num_choices" in options:
        return Found(TASK_LOADERS["multiple-choice"], "--num_choices")
    sources = [("this notebook", own_code)] if own_code else []
    own = os.path.abspath(script_path) if own_code else ""
    folder = os.path.dirname(os.path.abspath(script_path))
    sources += [(os.path.relpath(p, folder), code) for p, code in project_sources(script_path) if p != own]
    if _spelled_out(output):
        found = code_loader(sources, {_normalised(output): output})
        if found is not None:
            return found
    found = code_loader(sources, {MODEL_FN: "the deployed model in its SageMaker model_fn"})
    if found is not None:
        return found
    folder = _local_folder(model, script_path)
    if folder is not None:
        found = local_loader(folder)
        if found is not None:
            return found
    if _spelled_out(model):
        found = code_loader(sources, {_normalised(model): model})
        if found is not None:
            return found
    if named is not None:
        return Found(named, "going by the model's name")
    return None


def _spelled_out(value: str) -> bool:
    """A value the script spells out, not one it expands at run time."""
    return bool(value) and not any(c in value for c in "$`{}")


def _local_folder(model: str, script_path: str) -> str | None:
    """The folder ``--model`` names on this machine: an absolute path, or one relative to the script's
    folder (a script read from stdin has none)."""
    if not _spelled_out(model) or not (os.path.isabs(model) or os.path.isfile(script_path)):
        return None
    path = model if os.path.isabs(model) else os.path.join(os.path.dirname(os.path.abspath(script_path)), model)
    return path if os.path.isdir(path) else None


def expand_placeholders(word: str, code: str) -> str:
    """``{NAME}`` in a notebook's ``!`` line, which IPython fills with the Python variable: the string
    or number the notebook's code assigns once to NAME (the word as it is when one is not that)."""
    if "{" not in word:
        return word
    values = _module_values(code)
    names = re.findall(r"\{(\w+)\}", word)
    if not names or any(values.get(name) is None for name in names):
        return word
    return re.sub(r"\{(\w+)\}", lambda match: values[match.group(1)], word)


@lru_cache(maxsize=8)
def _module_values(code: str) -> dict[str, str | None]:
    """Names the code assigns once to a string or a number -> that value as IPython writes it."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    _, values = _bindings(tree)
    found: dict[str, str | None] = {}
    for name, value in values.items():
        hops = 3
        while isinstance(value, ast.Name) and values.get(value.id) is not None and hops:
            value, hops = values[value.id], hops - 1
        plain = isinstance(value, ast.Constant) and isinstance(value.value, (str, int, float))
        found[name] = str(value.value) if plain and not isinstance(value.value, bool) else None
    return found
