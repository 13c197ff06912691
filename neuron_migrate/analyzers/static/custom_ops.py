"""NA3xx: custom ops and kernels that have no Neuron implementation."""

from __future__ import annotations

import ast

from neuron_migrate.analyzers.static.base import FileScan, check

LIBRARY = frozenset(
    {
        "torch.library.custom_op",
        "torch.library.triton_op",
        "torch.library.Library",
        "torch.library.define",
        "torch.library.impl",
        "torch.library.register_kernel",
    }
)
CORE_NAMESPACES = frozenset({"aten", "prim", "prims"})
EXTENSIONS = "torch.utils.cpp_extension."
SCRIPTING = frozenset({"torch.jit.script", "torch.jit.trace", "torch.jit.trace_module"})


@check(ast.Call)
def library_definitions(scan: FileScan, call: ast.Call):
    callee = scan.callee(call)
    if callee in LIBRARY:
        yield "NA301", call, f"`{callee.rsplit('.', 1)[-1]}` defines an op that runs on the CPU on neuron"
    elif callee.startswith(EXTENSIONS):
        yield "NA303", call, f"`{callee}` builds a C++/CUDA extension"
    elif callee in SCRIPTING:
        yield "NA305", call, ""


@check(ast.Attribute)
def ops_namespace(scan: FileScan, node: ast.Attribute):
    """``torch.ops.<namespace>.<op>``: reported once per namespace use, at the namespace."""
    value = node.value
    if isinstance(value, ast.Attribute) and scan.qualified(value) == "torch.ops" and node.attr not in CORE_NAMESPACES:
        yield "NA302", node, f"`torch.ops.{node.attr}` is outside the core ATen namespaces"


@check(ast.Import, ast.ImportFrom)
def triton(scan: FileScan, node):
    modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
    if any(m == "triton" or m.startswith("triton.") for m in modules) and not scan.facts.get("triton"):
        scan.facts["triton"] = True  # one finding for the file's Triton imports
        yield "NA304", node, ""
    if any(m.startswith("torch.utils.cpp_extension") for m in modules):
        yield "NA303", node, ""


@check(ast.FunctionDef)
def triton_kernel(scan: FileScan, node: ast.FunctionDef):
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if scan.qualified(target).startswith("triton."):
            yield "NA304", decorator, f"`{node.name}` is a Triton kernel"
