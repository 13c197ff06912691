"""NA6xx: the model architectures a project loads, looked up offline in the shipped readiness cards.

``X.from_pretrained("<folder>")`` with a local ``config.json`` (a diffusers one in its ``subfolder``),
``AutoConfig.for_model("<model_type>")`` and a concrete class (``Qwen2ForCausalLM.from_pretrained("<Hub id>")``,
``FluxTransformer2DModel.from_pretrained(...)``) name an architecture; a Hub id loaded through an auto class
without a local config cannot be known offline (NA603). Only model and config classes
count: a tokenizer's or processor's ``from_pretrained`` says nothing of the architecture.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from neuron_migrate.analyzers.models.lookup import card_row, model_type_of_class, versions
from neuron_migrate.analyzers.static.base import FileScan, check, constant, keyword

MODEL_CLASS = re.compile(r"(Model|Config|For[A-Z]\w*|Pipeline)$")
NOT_READY = ("not ready", "not built")


@check(ast.Call)
def loaded_architecture(scan: FileScan, call: ast.Call):
    model_type, named = _named_architecture(scan, call)
    if named is None:
        return
    if model_type is None:
        yield "NA603", call, f"{named!r} is a Hub id or a folder without config.json: its architecture is unknown " \
                             "offline", "run neuron-migrate audit --model <its config.json>"
        return
    row = card_row(model_type)
    if row is None:
        return  # an architecture the table has no row for says nothing
    verdict = row["verdict"]
    if verdict == "ready":
        return
    rule = "NA601" if verdict in NOT_READY else "NA602"
    first = f": {row['problem']}" + (f" ({row['where']})" if row["where"] else "") if row["problem"] else ""
    detail = f"{model_type} is {verdict} on neuron{first} [readiness card, {versions()}]"
    yield rule, call, detail, row["fix"] or f"run neuron-migrate audit --model {model_type} for the whole card"


def _named_architecture(scan: FileScan, call: ast.Call) -> tuple[str | None, str | None]:
    """(model_type or None when unknown offline, what the code named) for a loading call, else (None, None)."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None, None
    owner = scan.dotted(func.value).rpartition(".")[2]
    if not MODEL_CLASS.search(owner):
        return None, None
    first = constant(call.args[0]) if call.args else constant(keyword(call, "pretrained_model_name_or_path"))
    if func.attr == "for_model" and isinstance(first, str):
        return first, first
    if func.attr != "from_pretrained" or not isinstance(first, str):
        return None, None
    # a local config says what it is; else a concrete class does (LlamaForCausalLM.from_pretrained("org/id"))
    return _local_model_type(scan.path, first, keyword(call, "subfolder")) or model_type_of_class(owner), first


def _local_model_type(path: str, named: str, subfolder=None) -> str | None:
    """The architecture of a local model folder: its config's ``model_type`` (transformers) or ``_class_name``
    (diffusers, whose pipelines keep each model in a subfolder)."""
    sub = constant(subfolder) if subfolder is not None else None
    for base in (Path(path).parent, Path.cwd()):
        config = base / named / (sub if isinstance(sub, str) else "") / "config.json"
        if config.is_file():
            try:
                data = json.loads(config.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            if not isinstance(data, dict):
                return None
            return data.get("model_type") or data.get("_class_name")
    return None
