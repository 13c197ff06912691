"""NA2xx: data-dependent ops and host syncs in model or step code.

Outside step code these are harmless (a metric read after training), so only code the walker
places in a ``forward``, a compiled function or a training loop is reported.
"""

from __future__ import annotations

import ast

from neuron_migrate.analyzers.static.base import FileScan, check, constant, keyword, last_name, method_name

SYNC_METHODS = {"item": "NA201", "tolist": "NA202", "numpy": "NA202"}
NONZERO = frozenset({"torch.nonzero", "torch.argwhere"})
UNIQUE = frozenset({"torch.unique", "torch.unique_consecutive"})
BRANCH_METHODS = frozenset({"item", "any", "all", "sum", "max", "min", "mean", "equal", "allclose", "isnan", "isinf"})
BRANCH_FUNCTIONS = frozenset({"torch.any", "torch.all", "torch.equal", "torch.allclose", "torch.isnan", "torch.isinf"})


@check(ast.Call)
def host_reads(scan: FileScan, call: ast.Call):
    if not scan.in_step or id(call) in _branch_calls(scan):
        return
    rule = SYNC_METHODS.get(method_name(call))
    if rule and not call.args:
        yield rule, call, ""


@check(ast.Call)
def value_dependent_shapes(scan: FileScan, call: ast.Call):
    if not scan.in_step:
        return
    callee, method = scan.callee(call), method_name(call)
    if callee in NONZERO or (method in ("nonzero", "argwhere") and not callee):
        yield "NA203", call, ""
    elif callee in UNIQUE or (method in ("unique", "unique_consecutive") and not callee):
        yield "NA204", call, ""
    elif method == "masked_select" or callee == "torch.masked_select":
        yield "NA205", call, ""
    elif callee == "torch.where" and len(call.args) == 1 and not call.keywords:
        yield "NA206", call, ""
    elif method == "repeat_interleave":
        yield from _repeat_interleave(scan, call, callee)


def _repeat_interleave(scan: FileScan, call: ast.Call, callee: str):
    repeats = call.args[1] if callee == "torch.repeat_interleave" and len(call.args) > 1 else None
    if callee != "torch.repeat_interleave":
        repeats = call.args[0] if call.args else keyword(call, "repeats")
    repeats = repeats if repeats is not None else keyword(call, "repeats")
    if repeats is None or isinstance(constant(repeats), int) or keyword(call, "output_size") is not None:
        return
    yield "NA207", call, ""


@check(ast.Subscript)
def boolean_mask(scan: FileScan, node: ast.Subscript):
    if scan.in_step and isinstance(node.ctx, ast.Load) and _is_mask(node.slice):
        yield "NA205", node, f"indexing with the mask `{ast.unparse(node.slice)}`"


@check(ast.If, ast.While, ast.IfExp)
def tensor_branch(scan: FileScan, node):
    if not scan.in_step:
        return
    for call in _tensor_reads(scan, node.test):
        _branch_calls(scan).add(id(call))
        yield "NA208", node.test, f"the condition `{ast.unparse(node.test)}` reads a tensor value"
        return


@check(ast.Call)
def print_tensor(scan: FileScan, call: ast.Call):
    if not scan.in_step or not isinstance(call.func, ast.Name) or call.func.id != "print":
        return
    values = [*call.args, *(kw.value for kw in call.keywords if kw.arg is None)]
    if any(_may_be_tensor(scan, v) for v in values):
        yield "NA209", call, ""


def _is_mask(index: ast.AST) -> bool:
    return isinstance(index, ast.Compare) and not any(isinstance(op, (ast.In, ast.NotIn, ast.Is, ast.IsNot)) for op in index.ops)


def _tensor_reads(scan: FileScan, test: ast.AST):
    for node in ast.walk(test):
        if isinstance(node, ast.Call) and (method_name(node) in BRANCH_METHODS or scan.callee(node) in BRANCH_FUNCTIONS):
            yield node


def _branch_calls(scan: FileScan) -> set[int]:
    """Calls already reported as part of a tensor branch (NA208), so ``if x.item():`` is one finding."""
    return scan.facts.setdefault("branch_calls", set())


def _may_be_tensor(scan: FileScan, value: ast.AST) -> bool:
    """A value computed by a call or an operator on such values (``loss = model(x)``, ``loss * 2``), an item of a
    batch, or a name assigned one of those; not literals, host reads (``.item()`` is NA201), plain builtins,
    attributes, nor names only ever assigned host values (``avg = total / steps`` with ``total += loss.item()``)."""
    return _tensorish(value, _tensor_names(scan))


def _tensorish(value: ast.AST, names: set[str]) -> bool:
    if isinstance(value, ast.JoinedStr):
        return any(_tensorish(v.value, names) for v in value.values if isinstance(v, ast.FormattedValue))
    if isinstance(value, ast.Call):
        return method_name(value) not in SYNC_METHODS and last_name(value) not in PLAIN_BUILTINS
    if isinstance(value, ast.Name):
        return value.id in names
    if isinstance(value, ast.BinOp):
        return _tensorish(value.left, names) or _tensorish(value.right, names)
    if isinstance(value, ast.UnaryOp):
        return _tensorish(value.operand, names)
    return isinstance(value, ast.Subscript)


PLAIN_BUILTINS = frozenset({"len", "int", "float", "str", "round", "format", "repr", "type", "time", "perf_counter"})


def _tensor_names(scan: FileScan) -> set[str]:
    """Names the file assigns, anywhere, a value that may be a tensor: grown to a fixpoint, since
    ``avg = total / n`` is a tensor exactly when ``total`` or ``n`` is one."""
    names = scan.facts.get("tensor_names")
    if names is None:
        assignments = list(_assignments(scan.tree))
        names = set()
        grown = True
        while grown:
            grown = False
            for target, value in assignments:
                if target not in names and _tensorish(value, names):
                    names.add(target)
                    grown = True
        scan.facts["tensor_names"] = names
    return names


def _assignments(tree: ast.AST):
    """(name, value) for every ``name = value`` and ``name op= value`` of the file."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            yield from ((t.id, node.value) for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name) and node.value:
            yield node.target.id, node.value
