"""The files a project saves traced Neuron models to, read from its Python files and notebooks (NM402).

A compile script traces a model and saves it (``torch.jit.save(traced, "model_neuron.pt")``,
``traced.save(path)``); a serving script, a FastAPI app or a SageMaker ``inference.py`` loads that
file, often without importing anything from Neuron. Only the script that wrote the file says what it
holds, so the loading side looks for the file's name among the traced saves of its own file and of
the files around it (``migrate/neighbors.py``).

What is read here must come out the same before and after those files are migrated: they may be
rewritten in the same run, in any order. The rewrite keeps every save of a traced model (it only
marks it), and a trace becomes ``torch.compile(..., backend="neuron")``: both count as traced.

The files are read with ``ast``, not LibCST: nothing is rewritten here, and the other files are many.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
from dataclasses import dataclass, field

from neuron_migrate.migrate.neighbors import MAX_BYTES, neighbor_files

# The import a migrated dual-stack guard probes TorchNeuron with: it says nothing of tracing, and a
# second run must read the file as the first did.
NOT_PROBE = r"(?!\s*# noqa: F401 \(fails where TorchNeuron is not installed\))"
# A file that traces or compiles for Neuron names one of these, before and after its migration.
NEURON_WORDS = re.compile(
    rf"torch_neuronx\b{NOT_PROBE}|neuronx_distributed|backend\s*=\s*[\"']neuron[\"']".encode()
)
# A file name that says it holds a Neuron model: resnet50_neuron.pt, model_neuron.pt, enc.neuron.
NEURON_FILE = re.compile(r"neuron", re.IGNORECASE)
_FILE_NAME = re.compile(r"[\w.+-]*[\w+-]\.[A-Za-z0-9]+")
SCRIPTED_SPELLINGS = ("torch.jit.script", "torch.jit.trace", "jit.script", "jit.trace")
# How many assignments deep a path is followed (``path = os.path.join(folder, name)``, ``name = "x.pt"``).
DEPTH = 3


def file_name(text: str) -> str | None:
    """The last part of a path written in a string (``f"{out}/model.pt"`` -> ``model.pt``), when it
    looks like a file name with an extension."""
    base = text.replace("\\", "/").rsplit("/", 1)[-1]
    return base if _FILE_NAME.fullmatch(base) and not base.startswith(".") else None


@dataclass
class SourceFacts:
    """What one Python source says about paths and traced models."""

    values: dict[str, list[ast.expr]] = field(default_factory=dict)  # name -> the values assigned to it
    flags: dict[str, list[ast.expr]] = field(default_factory=dict)  # argparse dest -> its defaults
    traced: dict[str, str] = field(default_factory=dict)  # code of a traced model -> the module traced
    saves: dict[str, int] = field(default_factory=dict)  # file name -> line of a save of a traced model
    neuron: bool = False  # the source traces or compiles for Neuron at all

    def names_of(self, expr: ast.expr, depth: int = DEPTH) -> list[str]:
        """The file names a path expression can take: its strings, and those of the names it reads
        (assignments, parameter defaults, argparse defaults), a few assignments deep."""
        found: list[str] = []
        for node in ast.walk(expr):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                name = file_name(node.value)
                if name and name not in found:
                    found.append(name)
            elif depth and isinstance(node, ast.Name):
                for value in self.values.get(node.id, ()):
                    found += [n for n in self.names_of(value, depth - 1) if n not in found]
            elif depth and isinstance(node, ast.Attribute):
                for value in self.flags.get(node.attr, ()):
                    found += [n for n in self.names_of(value, depth - 1) if n not in found]
        return found


class _Reader(ast.NodeVisitor):
    def __init__(self, facts: SourceFacts) -> None:
        self.facts = facts
        self.calls: list[ast.Call] = []

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._assigned(target, node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._assigned(node.target, node.value)
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        for arg, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults):
            self.facts.values.setdefault(arg.arg, []).append(default)
        for arg, default in zip(args.kwonlyargs, args.kw_defaults):
            if default is not None:
                self.facts.values.setdefault(arg.arg, []).append(default)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        self.calls.append(node)
        self._flag(node)
        self.generic_visit(node)

    def _assigned(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self.facts.values.setdefault(target.id, []).append(value)
        module = traced_module(value)
        if module is not None:
            self.facts.traced[ast.unparse(target)] = module

    def _flag(self, call: ast.Call) -> None:
        """``parser.add_argument("--model-path", default="model_neuron.pt")``: ``args.model_path``."""
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument"):
            return
        default = next((k.value for k in call.keywords if k.arg == "default"), None)
        dest = next((k.value.value for k in call.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)), None)
        flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        long = [f for f in flags if f.startswith("--")]
        dest = dest or (long[0][2:] if long else (flags[0].lstrip("-") if flags else None))
        if default is not None and isinstance(dest, str):
            self.facts.flags.setdefault(dest.replace("-", "_"), []).append(default)


def traced_module(value: ast.expr) -> str | None:
    """The code of the module a trace call traces (``"model"``; ``""`` when it does not say), or None
    when ``value`` is no trace: ``torch_neuronx.trace(model, x)``, ``parallel_model_trace(...)``, an NxD
    ``builder.trace()``, or what the rewrite made of a trace, ``torch.compile(m, backend="neuron")``."""
    if not isinstance(value, ast.Call):
        return None
    callee = ast.unparse(value.func)
    tail = callee.rsplit(".", 1)[-1]
    is_trace = tail in ("trace", "parallel_model_trace") and not callee.startswith(SCRIPTED_SPELLINGS)
    is_compile = tail == "compile" and any(
        k.arg == "backend" and isinstance(k.value, ast.Constant) and k.value.value == "neuron" for k in value.keywords
    )
    if not (is_trace or is_compile):
        return None
    first = value.args[0] if value.args else next((k.value for k in value.keywords if k.arg in ("func", "model")), None)
    return _module_code(first) if first is not None else ""


def _module_code(node: ast.expr) -> str:
    """``model.to("neuron").eval()`` (what the rewrite passes to torch.compile) -> ``model``."""
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("to", "eval", "half", "float", "bfloat16", "cpu")
    ):
        node = node.func.value
    return "" if isinstance(node, ast.Lambda) else ast.unparse(node)


def _saved(call: ast.Call, facts: SourceFacts) -> ast.expr | None:
    """The path a call saves a traced model to, or None: ``torch.jit.save(traced, path)`` (of anything
    but a plain TorchScript model), ``torch.save(traced, path)``, ``traced.save(path)``."""
    callee = ast.unparse(call.func)
    args = [*call.args, *(k.value for k in call.keywords if k.arg in ("m", "obj", "f"))]
    if callee.endswith("jit.save") and len(args) >= 2:
        return None if _scripted(args[0], facts) else args[1]
    if callee == "torch.save" and len(args) >= 2:
        return args[1] if _traced(args[0], facts) else None
    if isinstance(call.func, ast.Attribute) and call.func.attr == "save" and call.args:
        return call.args[0] if _traced(call.func.value, facts) else None
    return None


def _traced(node: ast.expr, facts: SourceFacts) -> bool:
    return traced_module(node) is not None or ast.unparse(node) in facts.traced


def _scripted(node: ast.expr, facts: SourceFacts) -> bool:
    """A TorchScript model made without Neuron: ``torch.jit.script(m)`` or a name assigned one."""
    values = [node, *facts.values.get(node.id, ())] if isinstance(node, ast.Name) else [node]
    return any(isinstance(v, ast.Call) and ast.unparse(v.func).startswith(SCRIPTED_SPELLINGS) for v in values)


def source_facts(text: str) -> SourceFacts | None:
    """The facts of one Python source, None when it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    facts = SourceFacts(neuron=bool(NEURON_WORDS.search(text.encode("utf-8", "surrogateescape"))))
    reader = _Reader(facts)
    reader.visit(tree)
    if facts.neuron:
        for call in reader.calls:
            path = _saved(call, facts)
            for name in facts.names_of(path) if path is not None else ():
                facts.saves.setdefault(name, call.lineno)
    return facts


# ----- the other files of the project -------------------------------------------------------------


def _notebook_sources(data: bytes) -> list[str]:
    """The Python of a notebook: its code cells as one module (a notebook is one namespace), IPython
    lines blanked and cells that do not parse left out (the body of a ``%%time`` cell is in), then the
    body of each ``%%writefile x.py`` cell as the file it writes. Other ``%%`` cells are left out."""
    try:
        cells = json.loads(data).get("cells", [])
    except (ValueError, AttributeError):
        return []
    namespace, written = [], []
    for cell in cells if isinstance(cells, list) else ():
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        lines = ("".join(source) if isinstance(source, list) else str(source)).splitlines()
        if lines and lines[0].startswith("%%"):
            if re.match(r"%%(writefile|file)\b.*\.py\s*$", lines[0]):
                written.append("\n".join(lines[1:]))
            if not re.match(r"%%(time|timeit|capture|prun)\b", lines[0]):
                continue
            lines = ["", *lines[1:]]
        text = "\n".join("" if line.lstrip().startswith(("!", "%")) else line for line in lines)
        if _parses(text):
            namespace.append(text)
    return ["\n".join(namespace), *written]


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


@functools.lru_cache(maxsize=512)
def _file_saves(path: str, _mtime_ns: int, _size: int) -> tuple[tuple[str, int], ...]:
    """(file name, line) of each traced save of one file; keyed by its stat, so an edit is seen."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError:
        return ()
    if len(data) > MAX_BYTES or not NEURON_WORDS.search(data):
        return ()
    texts = _notebook_sources(data) if path.endswith(".ipynb") else [data.decode("utf-8", "replace")]
    saves: dict[str, int] = {}
    for text in texts:
        facts = source_facts(text)
        for name, line in (facts.saves if facts is not None else {}).items():
            saves.setdefault(name, line)
    return tuple(saves.items())


def project_saves(path: str) -> dict[str, str]:
    """File name -> the file around ``path`` that saves a traced Neuron model under that name, written
    relative to ``path``'s folder (the first such file in a fixed order)."""
    folder = os.path.dirname(os.path.abspath(path))
    found: dict[str, str] = {}
    for other in neighbor_files(path):
        try:
            stat = os.stat(other)
        except OSError:
            continue
        for name, _ in _file_saves(other, stat.st_mtime_ns, stat.st_size):
            found.setdefault(name, os.path.relpath(other, folder).replace(os.sep, "/"))
    return found
