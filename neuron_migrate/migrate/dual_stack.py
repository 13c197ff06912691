"""--keep-dual-stack: a dual-stack guard keeps its legacy branch and gains a neuron one beside it.

The engine visits the guard with the rules on, so what it leaves is the migrated copy of the legacy
branch; this module puts the original branch back and the copy next to it:

- ``try: <legacy> except ImportError: <fallback>`` becomes ``try: <legacy> except ImportError: try:
  <probe> <copy> except ImportError: <fallback>``: the neuron copy runs where torch_xla is missing and
  TorchNeuron is there, the fallback where neither is. Flags the legacy branch sets to True
  (``HAVE_XLA = True``) are set to False in the copy: the code they guard gets its own neuron branch.
- ``if is_torch_xla_available(): <legacy>`` gains ``elif is_torch_neuron_available(): <copy>`` (the copy's
  test is the migrated one), and ``if HAVE_XLA: <legacy>`` gains ``elif <TorchNeuron is there>: <copy>``.

A guard already paired (a rerun) keeps both branches as they are. Guards of other shapes (several
handlers, ``else:``/``finally:``, a negated check) are kept and reported for a human to pair.
"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.guards import is_legacy_import_block

_EMPTY = cst.Module(body=[])

PAIRED, PAIRABLE, KEPT = "paired", "pairable", "kept"


def _code(node: cst.CSTNode) -> str:
    return _EMPTY.code_for_node(node)


def _probe_line(stmt: cst.CSTNode, probe: str) -> bool:
    wanted = probe.split("#")[0].strip()
    return isinstance(stmt, cst.SimpleStatementLine) and _code(stmt).split("#")[0].strip() == wanted


def holds_probe(node: cst.Try, probe: str) -> bool:
    """A try whose body imports the TorchNeuron probe: the neuron branch of a paired guard."""
    return any(_probe_line(s, probe) for s in getattr(node.body, "body", ()))


def try_state(node: cst.Try, probe: str) -> str:
    """Whether a ``try:`` guard already has its neuron branch, can get one, or must be paired by hand."""
    if len(node.handlers) != 1 or node.orelse is not None or node.finalbody is not None:
        return KEPT
    inner = getattr(node.handlers[0].body, "body", ())
    if inner and isinstance(inner[0], cst.Try) and holds_probe(inner[0], probe):
        return PAIRED
    return PAIRABLE


def if_state(node: cst.If, neuron_checks: tuple[str, ...], positive) -> str:
    """The same for an ``if`` guard: paired when its ``elif`` tests for TorchNeuron; pairable when its test
    asks for the legacy stack plainly (``check()``, ``FLAG``, ``check() and x``: ``positive`` says so)."""
    orelse = node.orelse
    if isinstance(orelse, cst.If) and any(check in _code(orelse.test) for check in neuron_checks):
        return PAIRED
    return PAIRABLE if positive(node.test) else KEPT


def only_imports(block) -> bool:
    """Does ``block`` hold nothing but import lines?"""
    return all(
        isinstance(s, cst.SimpleStatementLine) and all(isinstance(x, (cst.Import, cst.ImportFrom)) for x in s.body)
        for s in getattr(block, "body", ())
    )


def paired_try(original: cst.Try, updated: cst.Try, probe: str, flags, legacy_prefixes) -> cst.Try | None:
    """``original`` with the migrated copy of its body in a try of its own under its handler; None when
    the copy would hold nothing but the probe (the neuron side needs nothing of this guard)."""
    copy = _neuron_copy(updated.body, flags, legacy_prefixes)
    if not copy:
        return None
    handler = updated.handlers[0]
    inner = cst.Try(
        body=cst.IndentedBlock(body=[cst.parse_statement(probe + "\n"), *copy]),
        handlers=[handler.with_changes(whitespace_after_except=cst.SimpleWhitespace(" "))],
    )
    outer_handler = original.handlers[0].with_changes(body=cst.IndentedBlock(body=[inner]))
    return original.with_changes(handlers=[outer_handler])


def paired_if(original: cst.If, updated: cst.If, neuron_test: cst.BaseExpression, legacy_prefixes) -> cst.If | None:
    """``original`` (its test and legacy branch) with ``elif <neuron_test>: <migrated copy>`` after it; None
    when the copy is empty (every statement of the branch was legacy-only)."""
    if not isinstance(updated.body, cst.IndentedBlock):
        return None
    copy = _neuron_copy(updated.body, (), legacy_prefixes)
    if not copy:
        return None
    neuron = cst.If(test=neuron_test, body=updated.body.with_changes(body=copy), orelse=updated.orelse)
    return original.with_changes(orelse=neuron)


def _neuron_copy(block: cst.BaseSuite, flags, legacy_prefixes) -> list[cst.BaseStatement]:
    """The migrated body's statements without its legacy imports, with its flags set to False; empty when
    nothing else is left."""
    kept = []
    meaningful = False
    statements = list(getattr(block, "body", ()))
    read = _names_read(statements)
    for stmt in statements:
        if isinstance(stmt, cst.SimpleStatementLine) and is_legacy_import_block(cst.IndentedBlock(body=[stmt]), legacy_prefixes):
            # A legacy import the copy still reads (code without an automatic migration, marked) stays: the
            # copy then falls back as the legacy branch did, instead of failing on a missing name.
            stmt = _without_legacy_imports(stmt, legacy_prefixes, read)
            if stmt is None:
                continue
        flag = _flag_set(stmt, flags)
        if flag is not None:
            stmt = cst.parse_statement(f"{flag} = False\n").with_changes(leading_lines=stmt.leading_lines)
        else:
            meaningful = True
        kept.append(stmt)
    return kept if meaningful else []


def _without_legacy_imports(line: cst.SimpleStatementLine, legacy_prefixes, read) -> cst.SimpleStatementLine | None:
    def dropped(small) -> bool:
        one = cst.IndentedBlock(body=[line.with_changes(body=[small])])
        return is_legacy_import_block(one, legacy_prefixes) and not (_bound_names(small) & read)

    kept = [small for small in line.body if not dropped(small)]
    if not kept:
        return None
    return line.with_changes(body=kept)


def _bound_names(small) -> set[str]:
    if isinstance(small, cst.Import):
        return {a.asname.name.value if a.asname else _code(a.name).split(".")[0] for a in small.names}
    if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
        return {a.asname.name.value if a.asname else _code(a.name) for a in small.names}
    return set()


def _names_read(statements) -> set[str]:
    names = _Names()
    for stmt in statements:
        stmt.visit(names)
    return names.found


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_Import(self, node) -> bool:
        return False

    def visit_ImportFrom(self, node) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.found.add(node.value)


def _flag_set(stmt: cst.CSTNode, flags) -> str | None:
    """``FLAG = True`` for a flag of a try guard: the flag's name."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    if not isinstance(small, cst.Assign) or len(small.targets) != 1 or _code(small.value) != "True":
        return None
    target = small.targets[0].target
    return target.value if isinstance(target, cst.Name) and target.value in flags else None
