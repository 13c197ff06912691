"""Every keyword an optimum-neuron 0.4.5 loading call takes, migrated, must be one the stock API takes.

The keywords are read from the released package's own signatures (its ``from_pretrained`` /
``_from_pretrained`` / ``_export`` parameters and the ``kwargs.pop`` names of the training models),
plus the older spellings seen in real scripts. Each is passed alone to a legacy call; the migrated call
must either be left to a human (a TODO marker) or pass only keywords the installed transformers /
diffusers accept: a transformers model is loaded for real (tiny Llama built from a config), a diffusers
pipeline is checked against what ``DiffusionPipeline.from_pretrained`` reads and the pipeline's
components (it would ignore anything else).
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from functools import cache

import pytest
from tiny import save_tiny_llama

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
reference = pytest.importorskip("reference.optimum_neuron")

# optimum's OptimizedModel.from_pretrained, which every NeuronModelFor* / pipeline class inherits
# (optimum itself is not unpacked next to optimum-neuron).
OPTIMIZED_MODEL_KEYWORDS = {
    "export": "True", "force_download": "False", "use_auth_token": "None", "token": "None", "cache_dir": "None",
    "subfolder": '""', "config": "None", "local_files_only": "False", "trust_remote_code": "False",
    "revision": "None",
}  # fmt: skip
# Older keywords met in real scripts: transformers-neuronx's sequence length, the transformers 4
# attention switch, the data-parallel devices of early diffusion pipelines.
OLDER_KEYWORDS = {"n_positions": "128", "use_flash_attention_2": "True", "device_ids": "[0, 1]"}
SHAPE_KEYWORDS = {name: "1" for name in ("batch_size", "sequence_length", "num_choices", "height", "width")}
# Values that pick a branch of the rule: a flash-attention choice, a cast type.
CHOSEN_VALUES = {"attn_implementation": '"flash_attention_2"', "auto_cast": '"matmul"', "auto_cast_type": '"bf16"'}

# (legacy call, stock class it must become, where its keywords are defined: (module, class, methods))
FAMILIES = {
    "encoder": (
        "from optimum.neuron import NeuronModelForSequenceClassification as Legacy",
        "Legacy.from_pretrained(MODEL, {keyword})",
        [("modeling_traced.py", "NeuronTracedModel", ("_from_pretrained", "_export"))],
    ),
    "seq2seq": (
        "from optimum.neuron import NeuronModelForSeq2SeqLM as Legacy",
        "Legacy.from_pretrained(MODEL, {keyword})",
        [("modeling_seq2seq.py", "NeuronModelForConditionalGeneration", ("_from_pretrained", "_export"))],
    ),
    "causal-lm": (
        "from optimum.neuron import NeuronModelForCausalLM as Legacy",
        "Legacy.from_pretrained(MODEL, {keyword})",
        [
            ("models/inference/backend/pretrained_model.py", "NxDPreTrainedModel", ("_from_pretrained", "_export")),
            ("models/inference/modeling_utils.py", "NeuronPreTrainedModel", ("get_neuron_config",)),
        ],
    ),
    "training": (
        "from optimum.neuron.models.training import NeuronModelForCausalLM as Legacy, TrainingNeuronConfig",
        "Legacy.from_pretrained(MODEL, TrainingNeuronConfig(), {keyword})",
        [("models/training/modeling_utils.py", "NeuronModelMixin", ("from_pretrained",))],
    ),
    "diffusion": (
        "from optimum.neuron import NeuronStableDiffusionPipeline as Legacy",
        "Legacy.from_pretrained(MODEL, {keyword})",
        [("modeling_diffusion.py", "NeuronDiffusionPipelineBase", ("_from_pretrained", "_export"))],
    ),
}
NOT_KEYWORDS = {"cls", "self", "model_id", "pretrained_model_name_or_path", "model_name_or_path", "trn_config"}


def _method(tree: ast.Module, cls: str, name: str) -> ast.FunctionDef:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == name:
                    return item
    raise LookupError(f"{cls}.{name}")


def _keywords_of(function: ast.FunctionDef) -> dict[str, str]:
    """Keyword parameters (and ``kwargs.pop("name", default)`` names) with their default as code."""
    args = function.args
    params = [*args.args, *args.kwonlyargs]
    defaults = [None] * (len(args.args) - len(args.defaults)) + list(args.defaults) + list(args.kw_defaults)
    out = {p.arg: ast.unparse(d) if d is not None else "None" for p, d in zip(params, defaults)}
    for node in ast.walk(function):
        call = node if isinstance(node, ast.Call) else None
        if call and isinstance(call.func, ast.Attribute) and call.func.attr == "pop" and call.args:
            if isinstance(call.func.value, ast.Name) and call.func.value.id == "kwargs":
                key = call.args[0]
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    out[key.value] = ast.unparse(call.args[1]) if len(call.args) > 1 else "None"
    return {k: v for k, v in out.items() if k not in NOT_KEYWORDS and not k.startswith("_")}


@cache
def legacy_keywords(family: str) -> dict[str, str]:
    """keyword -> a value to pass, for every keyword the family's loading call takes."""
    root = reference.source_root()
    _, _, sources = FAMILIES[family]
    out = {**OPTIMIZED_MODEL_KEYWORDS} if family != "training" else {}
    for path, cls, methods in sources:
        tree = ast.parse((root / path).read_text(encoding="utf-8"))
        for method in methods:
            out.update(_keywords_of(_method(tree, cls, method)))
    if family != "training":  # the training models' own source names the older keywords they took
        out.update(SHAPE_KEYWORDS)
        older = ("device_ids",) if family == "diffusion" else OLDER_KEYWORDS
        out.update({name: OLDER_KEYWORDS[name] for name in older})
    for name, value in CHOSEN_VALUES.items():
        if name in out:
            out[name] = value
    return out


def _cases():
    reason = reference.missing()
    if reason is not None:
        yield pytest.param("", "", "", marks=pytest.mark.skip(reason=reason), id="optimum-neuron-not-unpacked")
        return
    for family in FAMILIES:
        for keyword, value in sorted(legacy_keywords(family).items()):
            yield pytest.param(family, keyword, value, id=f"{family}-{keyword}")
    yield pytest.param("causal-lm", "use_flash_attention_2", "False", id="causal-lm-use_flash_attention_2-off")
    yield pytest.param("training", "use_flash_attention_2", "False", id="training-use_flash_attention_2-off")


# ----- what the stock API takes ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    return save_tiny_llama(tmp_path_factory.mktemp("llama"), with_tokenizer=False)


def _read_names(function) -> set[str]:
    source = inspect.getsource(function)
    return set(inspect.signature(function).parameters) | set(re.findall(r'kwargs\.pop\("(\w+)"', source))


@cache
def _config_attributes() -> frozenset[str]:
    return frozenset(transformers.PretrainedConfig().to_dict())


@cache
def transformers_takes(name: str, llama_dir: str) -> bool:
    """Whether ``from_pretrained`` takes ``name``: read by it, a config attribute, or (for the few it
    reads elsewhere) accepted by a real load of a tiny model."""
    if name in _read_names(transformers.PreTrainedModel.from_pretrained) or name in _config_attributes():
        return True
    try:
        transformers.AutoModelForCausalLM.from_pretrained(llama_dir, **{name: None})
    except TypeError as exc:
        return name not in str(exc)
    return True


def diffusers_takes(name: str) -> bool:
    diffusers = pytest.importorskip("diffusers")
    components = set(inspect.signature(diffusers.StableDiffusionPipeline.__init__).parameters)
    return name in _read_names(diffusers.DiffusionPipeline.from_pretrained) | components


# ----- the test -------------------------------------------------------------------------------------


def _stock_call(code: str) -> ast.Call | None:
    """The ``from_pretrained`` call of the migrated line (None when the legacy class is still called)."""
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "from_pretrained":
            owner = node.func.value
            return None if isinstance(owner, ast.Name) and owner.id == "Legacy" else node
    raise AssertionError(code)


@pytest.mark.parametrize(("family", "keyword", "value"), list(_cases()))
def test_a_migrated_loading_call_passes_only_what_the_stock_api_takes(migrate, llama_dir, family, keyword, value):
    imports, call, _ = FAMILIES[family]
    source = f"{imports}\n\nmodel = {call.format(keyword=f'{keyword}={value}')}\n"
    code = migrate(textwrap.dedent(source), path="script.py").code
    stock = _stock_call(code)
    if stock is None:
        assert "TODO(neuron-migrate" in code, code
        return
    call_code = ast.unparse(stock)
    assert keyword not in {"use_flash_attention_2", "n_positions", "device_ids"} or keyword not in call_code, code
    takes = diffusers_takes if family == "diffusion" else lambda name: transformers_takes(name, llama_dir)
    refused = [k.arg for k in stock.keywords if k.arg is not None and not takes(k.arg)]
    assert not refused, f"the stock call does not take {refused}:\n{code}"
    if keyword == "attn_implementation" or (keyword == "use_flash_attention_2" and value == "True"):
        assert "attn_implementation='sdpa'" in call_code and "flash_attention_2" not in call_code, code


# ----- the trainers ---------------------------------------------------------------------------------

TRAINERS = {
    "NeuronTrainer": ("trainers/transformers.py", "transformers", "Trainer"),
    "NeuronSFTTrainer": ("trainers/sft_trainer.py", "trl", "SFTTrainer"),
}


def _trainer_cases():
    reason = reference.missing()
    if reason is not None:
        return [pytest.param("", "", marks=pytest.mark.skip(reason=reason))]
    root = reference.source_root()
    cases = []
    for legacy, (path, _, _) in TRAINERS.items():
        tree = ast.parse((root / path).read_text(encoding="utf-8"))
        for keyword in sorted(_keywords_of(_method(tree, legacy, "__init__")) | {"model": "None"}):
            cases.append(pytest.param(legacy, keyword, id=f"{legacy}-{keyword}"))
    return cases


@pytest.mark.parametrize(("legacy", "keyword"), _trainer_cases())
def test_a_migrated_trainer_passes_only_what_the_stock_trainer_takes(migrate, legacy, keyword):
    _, module, stock = TRAINERS[legacy]
    library = pytest.importorskip(module)
    source = f"from optimum.neuron import {legacy}\n\ntrainer = {legacy}({keyword}=value)\n"
    code = migrate(source, path="train.py").code
    call = next(
        node for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    )
    if call.func.id == legacy:
        assert "TODO(neuron-migrate" in code, code
        return
    assert call.func.id == stock, code
    takes = set(inspect.signature(getattr(library, stock).__init__).parameters)
    refused = [k.arg for k in call.keywords if k.arg not in takes]
    assert not refused, f"{stock} does not take {refused}:\n{code}"
