"""The static audit's walker: one ``ast`` pass per file, import-aware names, and where the code is.

Checks are small functions registered per node type by the family modules (``shapes``,
``host_sync``, ``custom_ops``, ``cuda``). The walker tells them the qualified name of a callee
(``F.pad`` -> ``torch.nn.functional.pad`` through the file's imports) and whether the node sits
in model or step code (a ``forward``, a compiled function, a training loop), where host syncs and
data-dependent ops cost a graph break or a device round trip on every step.

``ast`` rather than LibCST: the audit only reads, and on a large repository the parse is most of
its cost.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from neuron_migrate.analyzers.hazards import HAZARDS, audit_fingerprint
from neuron_migrate.report.model import MANUAL, Finding, Span
from neuron_migrate.suppress import is_suppressed, suppressed_lines

# node type -> checks; a check yields (rule id, node to point at, detail message or "")
Check = Callable[["FileScan", ast.AST], Iterator[tuple[str, ast.AST, str]]]
CHECKS: dict[type, list[Check]] = {}

STEP_FUNCTIONS = re.compile(r"^(forward|training_step|train_step|compute_loss|step|.*_step|train_one_.*|train_epoch)$")
STEP_CALLS = frozenset({"backward", "step"})


def check(*node_types: type) -> Callable[[Check], Check]:
    def register(fn: Check) -> Check:
        for node_type in node_types:
            CHECKS.setdefault(node_type, []).append(fn)
        return fn

    return register


@dataclass
class FileScan:
    path: str
    source: str
    lines: list[str]
    tree: ast.Module | None = None
    imports: dict[str, str] = field(default_factory=dict)
    compiled_names: set[str] = field(default_factory=set)
    step_depth: int = 0
    findings: list[Finding] = field(default_factory=list)
    facts: dict[str, object] = field(default_factory=dict)
    seen: set[tuple[str, int, int]] = field(default_factory=set)

    # ----- names -------------------------------------------------------------------------------
    def dotted(self, node: ast.AST) -> str:
        """``a.b.c`` for a Name/Attribute chain, else ''."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return ""
        parts.append(node.id)
        return ".".join(reversed(parts))

    def qualified(self, node: ast.AST) -> str:
        """The dotted name with its root replaced by what the file imported under that name;
        '' when the root is not an import (a local variable, a parameter)."""
        text = self.dotted(node)
        if not text:
            return ""
        root, _, rest = text.partition(".")
        target = self.imports.get(root)
        if target is None:
            return ""
        return f"{target}.{rest}" if rest else target

    def callee(self, call: ast.Call) -> str:
        return self.qualified(call.func)

    @property
    def in_step(self) -> bool:
        return self.step_depth > 0

    # ----- findings ----------------------------------------------------------------------------
    def add(self, rule: str, node: ast.AST, detail: str = "", fix: str = "") -> None:
        line = getattr(node, "lineno", 1)
        column = getattr(node, "col_offset", 0)
        key = (rule, line, column)
        if key in self.seen:
            return
        self.seen.add(key)
        hazard = HAZARDS[rule]
        text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        end_line = getattr(node, "end_lineno", None) or line
        end_column = getattr(node, "end_col_offset", None) or column
        message = f"{hazard.title}: {detail or hazard.why}"
        finding = Finding(
            rule=rule,
            message=message,
            path=self.path,
            span=Span(line, column + 1, end_line, end_column + 1),
            safety=MANUAL,
            applied=False,
            severity=hazard.severity,
            before=text,
            fix=fix or hazard.fix,
            evidence="static",
            fingerprint=audit_fingerprint(rule, self.path, text),
        )
        self.findings.append(finding)


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def constant(node: ast.AST | None, default=None):
    return node.value if isinstance(node, ast.Constant) else default


def method_name(call: ast.Call) -> str:
    """``x.item()`` -> ``item``; '' for a plain function call."""
    return call.func.attr if isinstance(call.func, ast.Attribute) else ""


def last_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


class _Walker(ast.NodeVisitor):
    def __init__(self, scan: FileScan) -> None:
        self.scan = scan

    def visit_Import(self, node: ast.Import) -> None:
        _bind_import(self.scan, node)
        self._run_checks(node)

    visit_ImportFrom = visit_Import

    def visit_FunctionDef(self, node) -> None:
        is_step = bool(STEP_FUNCTIONS.match(node.name)) or node.name in self.scan.compiled_names
        is_step = is_step or any(self._is_compile(d) for d in node.decorator_list)
        self._in_context(node, is_step)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_For(self, node) -> None:
        self._in_context(node, _is_training_loop(node))

    visit_While = visit_For
    visit_AsyncFor = visit_For

    def generic_visit(self, node: ast.AST) -> None:
        self._run_checks(node)
        super().generic_visit(node)

    def _in_context(self, node: ast.AST, is_step: bool) -> None:
        if is_step:
            self.scan.step_depth += 1
        try:
            self.generic_visit(node)
        finally:
            if is_step:
                self.scan.step_depth -= 1

    def _run_checks(self, node: ast.AST) -> None:
        for fn in CHECKS.get(type(node), ()):
            for rule, target, detail, *fix in fn(self.scan, node):
                self.scan.add(rule, target, detail, *fix)

    def _is_compile(self, decorator: ast.AST) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return self.scan.qualified(target) == "torch.compile"


def _is_training_loop(loop: ast.AST) -> bool:
    """A loop whose body calls ``.backward()`` or ``<optimizer>.step()``."""
    for node in ast.walk(loop):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in STEP_CALLS:
            if node.func.attr == "backward" or "optim" in ast.unparse(node.func.value).lower():
                return True
    return False


def _compiled_names(tree: ast.Module, scan: FileScan) -> set[str]:
    """Functions compiled by name somewhere in the file: ``torch.compile(train_step)``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name):
            if scan.qualified(node.func) == "torch.compile":
                names.add(node.args[0].id)
    return names


def _bind_import(scan: FileScan, node: ast.Import | ast.ImportFrom) -> None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            root = alias.name.split(".")[0]
            scan.imports[alias.asname or root] = alias.name if alias.asname else root
    elif node.module and not node.level:
        for alias in node.names:
            if alias.name != "*":
                scan.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"


def _collect_imports(tree: ast.Module, scan: FileScan) -> None:
    """Module-level imports first, so a check sees a name the file imports below its use."""
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            _bind_import(scan, node)


def scan_source(source: str, path: str) -> list[Finding]:
    """The hazard findings of one Python source text, by the checks registered so far (the package's
    ``scan_source`` registers them all first). Raises SyntaxError for code that does not parse."""
    tree = ast.parse(source, filename=path)
    scan = FileScan(path=path, source=source, lines=source.splitlines(), tree=tree)
    _collect_imports(tree, scan)
    scan.compiled_names = _compiled_names(tree, scan)
    _Walker(scan).visit(tree)
    suppressed = suppressed_lines(source)
    for finding in scan.findings:
        span = finding.span
        if suppressed and is_suppressed(suppressed, finding.rule, range(span.line, span.end_line + 1)):
            finding.suppressed = True
    return sorted(scan.findings, key=lambda f: (f.span.line, f.span.column, f.rule))
