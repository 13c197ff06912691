"""The public surface of the released optimum-neuron package, read with libcst (never imported:
its pinned stack cannot be installed next to current transformers).

The package is unpacked by the test command (``pip install --no-deps --target``); see the README.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import libcst as cst

VERSION = "0.4.5"
ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TARGET = ROOT / ".reference" / f"optimum-neuron-{VERSION}"
INSTALL_HINT = (
    f"pip install --no-deps --target .reference/optimum-neuron-{VERSION} optimum-neuron=={VERSION}"
)

# Packages whose exports users import; each maps to how it declares them.
LAZY_PACKAGES = ("", "utils")  # transformers-style ``_import_structure`` dicts
EAGER_PACKAGES = ("trainers", "peft", "accelerate", "models.training")  # ``from .x import A, B``


@dataclass(frozen=True)
class PublicName:
    name: str
    package: str  # dotted path under optimum.neuron ("" = top level)
    module: str  # the submodule that defines or re-exports it, relative to optimum.neuron

    @property
    def import_paths(self) -> tuple[str, ...]:
        base = "optimum.neuron"
        package = f"{base}.{self.package}" if self.package else base
        return (f"{package}.{self.name}", f"{base}.{self.module}.{self.name}")


def missing() -> str | None:
    """Why the released package cannot be read (it is not unpacked), or None: tests that read it skip
    with this reason."""
    try:
        source_root()
    except FileNotFoundError as exc:
        return str(exc)
    return None


def source_root() -> Path:
    target = Path(os.environ.get("NEURON_MIGRATE_OPTIMUM_NEURON", DEFAULT_TARGET))
    package = target / "optimum" / "neuron"
    if not (package / "__init__.py").exists():
        raise FileNotFoundError(f"optimum-neuron {VERSION} is not unpacked at {target}; run: {INSTALL_HINT}")
    return package


def _parse(path: Path) -> cst.Module:
    return cst.parse_module(path.read_text(encoding="utf-8"))


def _literal_strings(node: cst.BaseExpression) -> list[str]:
    if not isinstance(node, (cst.List, cst.Tuple)):
        return []
    return [e.value.evaluated_value for e in node.elements if isinstance(e.value, cst.SimpleString)]


def _import_structure(init: Path, package: str) -> list[PublicName]:
    """Names of a lazy package: the ``_import_structure = {...}`` literal and its later
    ``_import_structure["mod"] = [...]`` additions."""
    names = []
    prefix = f"{package}." if package else ""
    for stmt in _parse(init).body:
        if not isinstance(stmt, cst.SimpleStatementLine) or not isinstance(stmt.body[0], cst.Assign):
            continue
        assign = stmt.body[0]
        target = assign.targets[0].target
        if isinstance(target, cst.Name) and target.value == "_import_structure" and isinstance(assign.value, cst.Dict):
            for element in assign.value.elements:
                module = element.key.evaluated_value
                names += [PublicName(n, package, prefix + module) for n in _literal_strings(element.value)]
        elif isinstance(target, cst.Subscript) and cst.Module([]).code_for_node(target.value) == "_import_structure":
            module = target.slice[0].slice.value.evaluated_value
            names += [PublicName(n, package, prefix + module) for n in _literal_strings(assign.value)]
    return names


def _relative_imports(init: Path, package: str) -> list[PublicName]:
    names = []
    for stmt in _parse(init).body:
        if not isinstance(stmt, cst.SimpleStatementLine) or not isinstance(stmt.body[0], cst.ImportFrom):
            continue
        node = stmt.body[0]
        if not node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            continue
        module = f"{package}.{cst.Module([]).code_for_node(node.module)}"
        names += [PublicName(cst.Module([]).code_for_node(a.name), package, module) for a in node.names]
    return names


@cache
def public_names() -> tuple[PublicName, ...]:
    root = source_root()
    names: list[PublicName] = []
    for package in LAZY_PACKAGES:
        names += _import_structure(root.joinpath(*package.split("."), "__init__.py") if package else root / "__init__.py", package)
    for package in EAGER_PACKAGES:
        names += _relative_imports(root.joinpath(*package.split("."), "__init__.py"), package)
    return tuple(n for n in names if not n.name.startswith("_") and n.name != "auto_models")


@cache
def dataclass_fields(module: str, class_name: str) -> tuple[str, ...]:
    """Annotated fields of a dataclass defined in ``optimum/neuron/<module>.py``."""
    path = source_root().joinpath(*module.split(".")).with_suffix(".py")
    for stmt in _parse(path).body:
        if isinstance(stmt, cst.ClassDef) and stmt.name.value == class_name:
            return tuple(
                small.target.value
                for line in stmt.body.body
                if isinstance(line, cst.SimpleStatementLine)
                for small in line.body
                if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name)
            )
    raise LookupError(f"{class_name} not found in {path}")
