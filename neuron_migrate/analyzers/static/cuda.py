"""NA4xx: CUDA-only code, with its torch.accelerator / "neuron" replacement."""

from __future__ import annotations

import ast
import re

from neuron_migrate.analyzers.static.base import FileScan, check, constant, keyword, method_name

CUDA_DEVICE = re.compile(r"cuda(:\d+)?")
DEVICE_KEYWORDS = frozenset({"device", "device_type", "device_map", "map_location"})
DEVICE_FIRST_ARG = frozenset({"torch.device", "torch.autocast", "torch.amp.autocast", "torch.amp.GradScaler"})
GUARDS = {
    "torch.cuda.is_available": "is False on Trainium, so the code it guards silently takes its CPU path; "
    "use torch.accelerator.is_available()",
    "torch.cuda.device_count": "is 0 on Trainium; use torch.accelerator.device_count()",
}


@check(ast.Call)
def cuda_method(scan: FileScan, call: ast.Call):
    if method_name(call) == "cuda" and not scan.callee(call):
        yield "NA401", call, ""


@check(ast.Attribute)
def cuda_module(scan: FileScan, node: ast.Attribute):
    name = scan.qualified(node)
    if not name:
        return
    if name.startswith("torch.cuda.amp"):
        yield "NA405", node, ""
    elif name.startswith("torch.backends.cudnn"):
        yield "NA404", node, ""
    elif name.startswith("torch.cuda.") and name.count(".") == 2:
        yield "NA402", node, f"`{name}` {GUARDS.get(name, 'has no meaning on Trainium')}"


@check(ast.Call)
def cuda_strings(scan: FileScan, call: ast.Call):
    values = [kw.value for kw in call.keywords if kw.arg in DEVICE_KEYWORDS]
    if scan.callee(call) in DEVICE_FIRST_ARG or method_name(call) == "to":
        values += call.args[:1]
    for value in values:
        text = constant(value)
        if isinstance(text, str) and CUDA_DEVICE.fullmatch(text):
            yield "NA403", value, f'"{text}" names a CUDA device'
    backend = keyword(call, "backend")
    backend = backend if backend is not None else (call.args[0] if call.args else None)
    if scan.callee(call).endswith("init_process_group") and constant(backend) == "nccl":
        yield "NA406", call, ""


@check(ast.Subscript)
def nccl_environment(scan: FileScan, node: ast.Subscript):
    key = constant(node.slice)
    if isinstance(key, str) and key.startswith("NCCL_") and scan.dotted(node.value).endswith("environ"):
        yield "NA406", node, f"`{key}` only configures NCCL"
