"""Jupyter notebooks (.ipynb): code cells through the Python rules, shell lines through the shell rules.

Cells are numbered from 1 over all cells, markdown included, so ``cell 3`` is ``nb["cells"][2]`` in
any tool; findings carry that number and spans that count lines and columns inside the cell
(``nb.ipynb:cell 3:2:5``).

- The code cells are migrated as one Python module, because a notebook is one namespace: a name
  imported in the first cell is recognised in the tenth, a legacy import goes only when no cell
  uses it any more, and an import a rule needs lands in the cell that holds the imports.
- IPython syntax is set aside first: every ``!cmd``, ``%magic`` and ``obj?`` line becomes a
  placeholder line of the same indentation, restored afterwards. A ``%%magic`` cell is handled by
  what its body is: Python for ``%%time``/``%%capture``/..., shell for ``%%bash``/``%%sh``, a file of
  its own for ``%%writefile`` (a Python file, a shell script, a requirements file: each migrated as
  that file would be), and anything else (``%%html``...) is left alone.
- ``!cmd``, ``%pip``, ``%env X=1`` (as ``export X=1``) and ``%%bash`` bodies go through the shell
  rules as one script in notebook order, since a variable set by ``%env`` stays set for every later
  command. Their markers become comment lines above the command.
- A cell that does not parse is reported (NM550) and kept as it is; the other cells are migrated.
- Only the ``source`` values of changed cells are rewritten, spliced into the original text:
  outputs, execution counts, metadata, cell ids and the file's own JSON layout and escaping stay
  byte for byte. The result is checked to be the same JSON apart from those sources.
"""

from __future__ import annotations

import ast
import codecs
import collections
import io
import json
import os
import re
import shlex
import tokenize
from dataclasses import dataclass, field, replace
from json.decoder import scanstring
from typing import TYPE_CHECKING

from neuron_migrate import markers
from neuron_migrate.migrate.discover import REQUIREMENTS, kind_of
from neuron_migrate.migrate.sources import NUL_MESSAGE, InternalError, Outcome, SourceError, guarded, nul_place
from neuron_migrate.migrate.write import split_lines, unified_diff
from neuron_migrate.report.model import CHANGED, MANUAL, UNCHANGED, Finding, Span
from neuron_migrate.ruleapi import rule_with_role
from neuron_migrate.ruleapi.reporter import Reporter

if TYPE_CHECKING:
    from neuron_migrate.migrate.engine import RulePlan



class NotebookError(SourceError):
    """A notebook that cannot be read, or written back, without losing something."""


# ----- reading ------------------------------------------------------------------------------------


@dataclass
class Cell:
    number: int  # 1-based, over all cells
    cell_type: str
    source: str  # the lines joined
    value: str | list[str]  # the JSON value as stored
    start: int  # span of the value's JSON text
    end: int


@dataclass
class Notebook:
    text: str
    bom: bool
    data: dict
    cells: list[Cell]


def read_notebook(data: bytes) -> Notebook:
    bom = data.startswith(codecs.BOM_UTF8)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise NotebookError(f"{line}:{column}: not valid UTF-8; a notebook is UTF-8 JSON") from None
    try:
        nb = json.loads(text, parse_constant=str)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None
    _check_format(nb)
    cells = [_cell(number, raw) for number, raw in enumerate(nb["cells"], start=1)]
    for cell, span in zip(cells, _source_spans(text)):
        if span is not None:
            cell.start, cell.end = span
    return Notebook(text, bom, nb, cells)


def _cell(number: int, raw) -> Cell:
    if not isinstance(raw, dict):
        raise NotebookError(f"cell {number} is not a JSON object")
    value = raw.get("source", "")
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        source = "".join(value)
    elif isinstance(value, str):
        source = value
    else:
        raise NotebookError(f"cell {number}: `source` is neither text nor a list of lines")
    return Cell(number, str(raw.get("cell_type", "")), source, value, -1, -1)


def _check_format(nb) -> None:
    if not isinstance(nb, dict):
        raise NotebookError("not a notebook: the JSON document is not an object")
    version = nb.get("nbformat")
    if version == 4 and isinstance(nb.get("cells"), list):
        return
    if "worksheets" in nb or version in (1, 2, 3):
        raise NotebookError(
            f"nbformat {version} notebook; only nbformat 4 is supported: convert it with "
            "`jupyter nbconvert --to notebook --nbformat 4` and run again"
        )
    raise NotebookError('not an nbformat 4 notebook (no `"nbformat": 4` with a `cells` list)')


def is_python_notebook(nb: dict) -> bool:
    """Kernels of other languages (R, Julia...) are left alone; a notebook that names none is Python."""
    metadata = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    for key, field_name in (("kernelspec", "language"), ("language_info", "name")):
        section = metadata.get(key)
        if isinstance(section, dict) and isinstance(section.get(field_name), str):
            return section[field_name].lower() == "python"
    return True


# A small JSON scanner: where each cell's "source" value sits in the text, so that only those
# characters are replaced. json.loads has already checked the document, so the scanner can trust
# its shape; values it does not need are skipped with the C decoder.
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder(parse_constant=str)


def _skip(text: str, pos: int) -> int:
    return _WHITESPACE.match(text, pos).end()


def _members(text: str, pos: int) -> tuple[dict[str, tuple[int, int]], int]:
    """An object at ``pos``: key -> span of its value (the last one wins, as in json.loads), and its end."""
    members: dict[str, tuple[int, int]] = {}
    pos = _skip(text, pos + 1)
    if text[pos] == "}":
        return members, pos + 1
    while True:
        key, pos = scanstring(text, pos + 1)
        pos = _skip(text, _skip(text, pos) + 1)
        _, end = _DECODER.raw_decode(text, pos)
        members[key] = (pos, end)
        pos = _skip(text, end)
        if text[pos] == "}":
            return members, pos + 1
        pos = _skip(text, pos + 1)


def _items(text: str, pos: int) -> list[tuple[int, int]]:
    """The spans of the values of the array at ``pos``."""
    items: list[tuple[int, int]] = []
    pos = _skip(text, pos + 1)
    if text[pos] == "]":
        return items
    while True:
        _, end = _DECODER.raw_decode(text, pos)
        items.append((pos, end))
        pos = _skip(text, end)
        if text[pos] == "]":
            return items
        pos = _skip(text, pos + 1)


def _source_spans(text: str) -> list[tuple[int, int] | None]:
    top, _ = _members(text, _skip(text, 0))
    cells_start, _ = top["cells"]
    spans: list[tuple[int, int] | None] = []
    pos = _skip(text, cells_start + 1)
    if text[pos] == "]":
        return spans
    while True:
        members, end = _members(text, pos)
        spans.append(members.get("source"))
        pos = _skip(text, end)
        if text[pos] == "]":
            return spans
        pos = _skip(text, pos + 1)


# ----- writing back -------------------------------------------------------------------------------


@dataclass(frozen=True)
class JsonStyle:
    """How the file writes what we have to write: escapes, line ending, indentation step."""

    ensure_ascii: bool
    newline: str
    unit: str

    @classmethod
    def of(cls, text: str) -> JsonStyle:
        # \u escapes of non-ASCII characters in an otherwise ASCII file: written with ensure_ascii.
        ensure_ascii = text.isascii() and bool(re.search(r"\\u(?!00[0-7])[0-9a-fA-F]{4}", text))
        newline = "\r\n" if "\r\n" in text else "\n"
        first = re.match(r"\s*\{([ \t]*\r?\n)?([ \t]*)", text)
        unit = first.group(2) if first and first.group(1) else ""
        return cls(ensure_ascii, newline, unit)

    def string(self, value: str) -> str:
        return json.dumps(value, ensure_ascii=self.ensure_ascii)


def splice_sources(notebook: Notebook, sources: dict[int, str]) -> str:
    """The notebook's text with the ``source`` of each cell in ``sources`` (number -> new text)
    replaced, in the form (one string or a list of lines) and layout the cell had."""
    style = JsonStyle.of(notebook.text)
    by_number = {cell.number: cell for cell in notebook.cells}
    out = []
    pos = 0
    for number in sorted(sources):
        cell = by_number[number]
        if cell.start < 0:
            raise NotebookError(f"cell {number} has no `source` to rewrite")
        out.append(notebook.text[pos : cell.start])
        out.append(_source_text(notebook.text, cell, sources[number], style))
        pos = cell.end
    out.append(notebook.text[pos:])
    return "".join(out)


def _source_text(text: str, cell: Cell, source: str, style: JsonStyle) -> str:
    if isinstance(cell.value, str):
        return style.string(source)
    lines = split_lines(source)
    if not lines:
        return "[]"
    spans = _items(text, cell.start)
    # Lines that did not change keep their exact JSON text, whatever escaping wrote them.
    known: dict[str, str] = {}
    for (start, end), value in zip(spans, cell.value):
        known.setdefault(value, text[start:end])
    items = [known.get(line) or style.string(line) for line in lines]
    first, separator, close = _list_layout(text, cell, spans, style)
    return "[" + first + separator.join(items) + close + "]"


def _list_layout(text: str, cell: Cell, spans, style: JsonStyle) -> tuple[str, str, str]:
    """What goes after ``[``, between items and before ``]`` in this list, taken from the list itself;
    for an empty list, from the indentation of its key and the file's indentation step."""
    if spans:
        first = text[cell.start + 1 : spans[0][0]]
        close = text[spans[-1][1] : cell.end - 1]
        if len(spans) > 1:
            separator = text[spans[0][1] : spans[1][0]]
        else:
            separator = "," + first if first else ", "
        return first, separator, close
    inner = text[cell.start + 1 : cell.end - 1]
    if not style.unit and "\n" not in inner:
        return "", ", ", ""
    line_start = text.rfind("\n", 0, cell.start) + 1
    key_indent = re.match(r"[ \t]*", text[line_start:]).group(0)
    close = inner if "\n" in inner else style.newline + key_indent
    first = close + (style.unit or " ")
    return first, "," + first, close


def check_splice(notebook: Notebook, new_text: str, sources: dict[int, str]) -> None:
    """The spliced text must be the same JSON document with only those sources changed."""
    try:
        again = json.loads(new_text, parse_constant=str)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"internal error: the rewritten notebook is not valid JSON ({exc})") from None
    for number, source in sources.items():
        value = again["cells"][number - 1].get("source")
        joined = value if isinstance(value, str) else "".join(value)
        if joined != source:
            raise NotebookError(f"internal error: cell {number} was not written back as migrated")
        again["cells"][number - 1]["source"] = notebook.cells[number - 1].value
    if again != notebook.data:
        raise NotebookError("internal error: writing the notebook back would change more than cell sources")


def cell_diff(path: str, number: int, old: str, new: str) -> str:
    """A unified diff of one cell's source, headed ``a/nb.ipynb:cell 3``."""
    # Cells seldom end with a newline; the diff would flag that on every last line.
    if not old.endswith(("\n", "\r")) and not new.endswith(("\n", "\r")):
        old, new = old + "\n" if old else old, new + "\n" if new else new
    return unified_diff(old, new, f"{path}:cell {number}")


# ----- IPython syntax -----------------------------------------------------------------------------

SHELL = "shell"  # a shell command: !cmd, !!cmd, %pip ..., %sx cmd
ENV = "env"  # %env NAME=value
KEEP = "keep"  # any other IPython line: restored as it was
HEADER = "header"  # the %%magic line of a cell whose body is Python

# Line magics whose argument is a shell command that starts with the magic's own name.
_PACKAGE_MAGICS = frozenset({"pip", "conda", "mamba", "micromamba"})
_SYSTEM_MAGICS = frozenset({"sx", "system"})
_ENV_LINE = re.compile(r"%(?P<magic>env|set_env)\s+(?P<name>[A-Za-z_]\w*)(?P<sep>=|[ \t]+)(?P<value>.*)$")
_HELP = re.compile(r"(?:\?{1,2}[\w.*]+|[\w.]+(?:\(\))?\?{1,2})\s*$")
_ASSIGNED_MAGIC = re.compile(r"[\w.]+(?:\s*,\s*[\w.]+)*\s*=\s*[!%]")
# Fine in a cell of its own, a syntax error anywhere but the top of the module the cells form.
_FUTURE_IMPORT = re.compile(r"from\s+__future__\s+import\b")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# %%magic -> what its body is.
_PYTHON_BODY_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
_SHELL_BODY_MAGICS = frozenset({"bash", "sh"})
_SHELL_SCRIPT_INTERPRETERS = frozenset({"bash", "sh"})
_WRITEFILE_MAGICS = frozenset({"writefile", "file"})
_PYTHON_FILE_SUFFIXES = (".py",)
_SHELL_FILE_SUFFIXES = (".sh", ".bash")


@dataclass
class Region:
    """Lines of a cell set aside as IPython syntax: ``lead`` marker comments above the line
    (``# neuron-migrate(NM5xx): ...`` written by an earlier run for this command), the line
    itself and its ``\\`` continuations."""

    number: int
    first: int  # 0-based index of the region's first line in the cell
    lead: int
    last: int  # one past the region's last line
    kind: str
    indent: str
    prefix: str = ""  # what precedes the shell command on its line: "!", "!!", "%", "%sx "
    env: re.Match | None = None

    @property
    def command(self) -> int:
        return self.first + self.lead


def line_kind(body: str) -> tuple[str, str, str, re.Match | None] | None:
    """(kind, indentation, shell prefix, %env match) of a line that starts with IPython syntax."""
    stripped = body.lstrip(" \t")
    indent = body[: len(body) - len(stripped)]
    if stripped.startswith("!"):
        prefix = "!!" if stripped.startswith("!!") else "!"
        return (SHELL if stripped[len(prefix) :].strip() else KEEP), indent, prefix, None
    if stripped.startswith("%") and not stripped.startswith("%%"):
        name = re.match(r"%(\w*)", stripped).group(1)
        if name in _PACKAGE_MAGICS:
            return SHELL, indent, "%", None
        if name in _SYSTEM_MAGICS:
            prefix = re.match(r"%\w+[ \t]*", stripped).group(0)
            return (SHELL if stripped[len(prefix) :].strip() else KEEP), indent, prefix, None
        env = _ENV_LINE.match(stripped)
        if env is not None:
            return ENV, indent, "", env
        return KEEP, indent, "", None
    if _HELP.match(stripped) or _ASSIGNED_MAGIC.match(stripped) or _FUTURE_IMPORT.match(stripped):
        return KEEP, indent, "", None
    return None


def _body(line: str) -> str:
    return line.rstrip("\r\n")


def _ending(line: str) -> str:
    return line[len(_body(line)) :]


def find_regions(lines: list[str], first_line: int, numbers) -> list[Region]:
    """The IPython lines of a cell from ``first_line`` on, each with its continuations and the
    marker comments an earlier run left above it."""
    regions: list[Region] = []
    index = first_line
    taken = first_line
    while index < len(lines):
        found = line_kind(_body(lines[index]))
        if found is None:
            index += 1
            continue
        kind, indent, prefix, env = found
        last = index + 1
        while _body(lines[last - 1]).endswith("\\") and last < len(lines):
            last += 1
        lead = 0
        if kind in (SHELL, ENV):
            while index - lead - 1 >= taken and markers.parse(lines[index - lead - 1]):
                lead += 1
        regions.append(Region(next(numbers), index - lead, lead, last, kind, indent, prefix, env))
        index = taken = last
    return regions


def masked_lines(lines: list[str], regions: list[Region], names: Placeholders) -> list[str]:
    """The cell with each region replaced by placeholder lines of the same count: a call where the
    command was, comments else. The call is a statement: a region alone in a block keeps the block
    valid, and no edit of the rules (which move or drop comments) can make it disappear."""
    out = list(lines)
    for region in regions:
        token = names.magic(region.number)
        for index in range(region.first, region.last):
            ending = _ending(lines[index])
            if index == region.command:
                out[index] = f"{region.indent}{token}(){ending}"
            else:
                out[index] = f"{region.indent}# {token}{ending}"
    return out


def starts_statement(before: str) -> bool:
    """Whether a line that follows ``before`` starts a new statement: not inside a string, a bracket
    or a ``\\`` continuation. A text that does not tokenize for another reason will not parse
    either, and is reported as such whatever is decided here."""
    try:
        # Only whether the whole text tokenizes matters: the tokens themselves are thrown away.
        collections.deque(tokenize.generate_tokens(io.StringIO(before).readline), maxlen=0)
    except tokenize.TokenError:
        return False  # EOF inside a multi-line string or statement
    except SyntaxError:
        return True
    return True


def mask_cell(lines: list[str], regions: list[Region], names: Placeholders) -> tuple[list[str], list[Region]]:
    """Mask the regions that really are IPython lines. A ``%`` or ``!`` at the start of a line inside
    a string or a bracket is Python (``(10\\n % 3)``), so a region counts only when the text above
    it, with the regions already accepted masked, ends where a statement may start."""
    kept: list[Region] = []
    for region in regions:
        above = masked_lines(lines[: region.first], kept, names)
        if region.kind == HEADER or starts_statement("".join(above)):
            kept.append(region)
    return masked_lines(lines, kept, names), kept


class Placeholders:
    """Placeholder names that occur nowhere in the notebook."""

    def __init__(self, text: str) -> None:
        n = 0
        while f"__nm{n or ''}_" in text:
            n += 1
        self.base = f"__nm{n or ''}_"

    def magic(self, number: int) -> str:
        return f"{self.base}magic_{number}__"

    def cell(self, number: int) -> str:
        return f"{self.base}cell_{number}__"

    def fragment(self, number: int) -> str:
        return f"# {self.base}fragment_{number}__"

    @property
    def module_import(self) -> str:
        return f"import {self.base}notebook__"

    @property
    def end(self) -> str:
        return f"{self.base}end__"

    def region_number(self, line: str) -> int | None:
        match = re.search(re.escape(self.base) + r"magic_(\d+)__", line)
        return int(match.group(1)) if match else None


# ----- the cells ----------------------------------------------------------------------------------

NAMESPACE = "namespace"  # Python that runs in the notebook's namespace
SHELL_BODY = "shell body"  # %%bash / %%sh
PYTHON_FILE = "python file"  # %%writefile x.py
SHELL_FILE = "shell file"  # %%writefile x.sh
REQUIREMENTS_FILE = "requirements file"  # %%writefile requirements.txt
WRITTEN_FILES = (PYTHON_FILE, SHELL_FILE, REQUIREMENTS_FILE)
UNTOUCHED = "untouched"  # %%html, %%javascript, ... and cells that do not parse


@dataclass
class CodeCell:
    cell: Cell
    lines: list[str]
    mode: str
    regions: list[Region] = field(default_factory=list)
    masked: list[str] = field(default_factory=list)
    written_path: str = ""
    set_aside: bool = False  # Python that does not parse
    # filled in by the passes
    output: list[str] | None = None  # masked lines after the Python pass
    replacements: dict[int, list[str]] = field(default_factory=dict)  # region number -> new lines
    body: str | None = None  # new body of a %% cell handled as a whole

    @property
    def number(self) -> int:
        return self.cell.number


def classify(cell: Cell, names: Placeholders, numbers, notebook_path: str) -> CodeCell:
    lines = split_lines(cell.source)
    code = CodeCell(cell, lines, NAMESPACE)
    header = re.match(r"%%(\w+)(.*)", _body(lines[0])) if lines else None
    if header is None:
        code.regions = find_regions(lines, 0, numbers)
    else:
        magic, arguments = header.group(1), header.group(2)
        code.mode = _cell_magic_mode(magic, arguments)
        if code.mode == NAMESPACE:
            head = Region(next(numbers), 0, 0, 1, HEADER, "")
            code.regions = [head, *find_regions(lines, 1, numbers)]
        elif code.mode in WRITTEN_FILES:
            code.written_path = os.path.join(os.path.dirname(notebook_path), _written_file(arguments))
    if code.mode == NAMESPACE:
        code.masked, code.regions = mask_cell(lines, code.regions, names)
    return code


def _cell_magic_mode(magic: str, arguments: str) -> str:
    if magic in _PYTHON_BODY_MAGICS:
        return NAMESPACE
    if magic in _SHELL_BODY_MAGICS:
        return SHELL_BODY
    if (
        magic == "script"
        and arguments.split()[:1]
        and os.path.basename(arguments.split()[0]) in _SHELL_SCRIPT_INTERPRETERS
    ):
        return SHELL_BODY
    if magic in _WRITEFILE_MAGICS:
        target = _written_file(arguments)
        if target.endswith(_PYTHON_FILE_SUFFIXES):
            return PYTHON_FILE
        if target.endswith(_SHELL_FILE_SUFFIXES):
            return SHELL_FILE
        if kind_of(target) == REQUIREMENTS:
            return REQUIREMENTS_FILE
    return UNTOUCHED


def _written_file(arguments: str) -> str:
    try:
        words = shlex.split(arguments)
    except ValueError:
        return ""
    files = [w for w in words if not w.startswith("-")]
    return files[-1] if files else ""


# ----- the migration ------------------------------------------------------------------------------


@dataclass
class Migration:
    sources: dict[int, str] = field(default_factory=dict)  # cell number -> new source
    findings: list[Finding] = field(default_factory=list)


def migrate_notebook(notebook: Notebook, path: str, plan: RulePlan, no_comments: bool) -> Migration:
    names = Placeholders(notebook.text)
    numbers = iter(range(1, 1 << 30))
    cells = [
        classify(cell, names, numbers, path)
        for cell in notebook.cells
        if cell.cell_type == "code" and cell.source.strip()
    ]
    migration = Migration()
    for code in cells:
        if code.mode == NAMESPACE:
            problem = _syntax_problem("".join(code.masked))
            if problem is not None:
                _set_aside(code, problem, plan, path, migration)
    _python_pass(cells, names, path, plan, no_comments, migration)
    for code in cells:
        if code.mode == PYTHON_FILE:
            _migrate_written_python(code, path, plan, no_comments, migration)
    _shell_pass(cells, names, path, plan, no_comments, migration)
    for code in cells:
        if code.mode == REQUIREMENTS_FILE:
            _migrate_written_requirements(code, path, plan, no_comments, migration)
    for code in cells:
        source = _new_source(code, names)
        if source is not None and source != code.cell.source:
            migration.sources[code.number] = source
    migration.findings.sort(key=lambda f: (f.cell or 0, f.span.line, f.span.column, f.rule))
    return migration


def _syntax_problem(text: str) -> tuple[int, int, str] | None:
    place = nul_place(text)  # Python's own message would have no place
    if place is not None:
        return *place, NUL_MESSAGE
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return exc.lineno or 1, exc.offset or 1, exc.msg
    except (ValueError, RecursionError, MemoryError) as exc:
        return 1, 1, str(exc) or type(exc).__name__
    return None


def _set_aside(code: CodeCell, problem: tuple[int, int, str], plan: RulePlan, path: str, migration: Migration) -> None:
    """A cell that does not parse: it stays as it is, and NM550 says so."""
    code.mode = UNTOUCHED
    code.set_aside = True
    line, column, message = problem
    rule = rule_with_role("unparsable-cell", plan.index.rules)
    if rule is None:
        return
    text = _body(code.lines[line - 1]) if 0 < line <= len(code.lines) else ""
    reporter = Reporter(path, code.cell.source, cell=code.number)
    finding = reporter.add(
        rule.meta,
        Span(line, column, line, column + 1),
        rule.MESSAGE.format(where=f"{line}:{column}", problem=message),
        MANUAL,
        applied=False,
        before=text.strip(),
        suppressed=reporter.suppresses(rule.meta.id, {1, line}),
    )
    migration.findings.append(finding)


def _in_cell(finding: Finding, path: str, number: int, line_of, column_of=None) -> Finding:
    """A finding of a pass moved to the cell it is about (the fingerprint follows the cell)."""
    span = finding.span
    start_line, end_line = line_of(span.line), line_of(span.end_line)
    start_column, end_column = span.column, span.end_column
    if column_of is not None:
        start_column, end_column = column_of(span.line, span.column), column_of(span.end_line, span.end_column)
    moved = replace(
        finding,
        path=path,
        cell=number,
        span=Span(start_line, start_column, end_line, end_column),
        fingerprint="",
    )
    return moved.finalize()


# ----- the Python pass ----------------------------------------------------------------------------


@dataclass
class ModuleLayout:
    """Where each cell sits in the module the namespace cells form."""

    cells: list[CodeCell]
    starts: list[int]  # 1-based module line of each cell's first line
    lengths: list[int]

    def cell_at(self, line: int) -> tuple[CodeCell, int] | None:
        for code, start, length in zip(self.cells, self.starts, self.lengths):
            if start <= line < start + length:
                return code, line - start + 1
        return None


def _build_module(cells: list[CodeCell], keep_alive: set[str], names: Placeholders) -> tuple[str, ModuleLayout]:
    # The first line is an import of our own, so that the module's leading import block exists
    # even when the first cell starts with a pip install: imports a rule adds then go right after
    # it, above the first cell, and are moved to the cell that holds the imports.
    parts = [names.module_import + "\n"]
    line = 2
    layout = ModuleLayout(cells, [], [])
    for code in cells:
        parts.append(names.cell(code.number) + "\n")
        text = "".join(code.masked)
        if not text.endswith(("\n", "\r")):
            text += "\n"
        parts.append(text)
        length = len(split_lines(text))
        layout.starts.append(line + 1)
        layout.lengths.append(length)
        line += 1 + length
    # A statement after the last cell: LibCST keeps the indented comment lines that end a module only
    # above a statement of the module's own.
    parts.append(names.end + "\n")
    if keep_alive:
        # Names that set-aside code (magics, cells that do not parse) still uses, listed as a module's
        # exports: they keep the imports of those names, which the import cleanup counts as used.
        parts.append(f"__all__ = {json.dumps(sorted(keep_alive))}\n")
    return "".join(parts), layout


def _keep_alive(cells: list[CodeCell]) -> set[str]:
    words: set[str] = set()
    for code in cells:
        if code.set_aside and not code.written_path:
            words.update(_IDENTIFIER.findall(code.cell.source))
        elif code.mode == NAMESPACE:
            for region in code.regions:
                words.update(_IDENTIFIER.findall("".join(code.lines[region.first : region.last])))
    return words


def _python_pass(cells, names, path, plan, no_comments, migration: Migration) -> None:
    import libcst as cst

    from neuron_migrate.migrate.engine import migrate_python

    while True:
        live = [c for c in cells if c.mode == NAMESPACE]
        if not live:
            return
        module, layout = _build_module(live, _keep_alive(cells), names)
        try:
            result = migrate_python(module, path, plan, no_comments=no_comments)
        except cst.ParserSyntaxError as exc:
            # Python's parser accepted the cell and LibCST did not: set that cell aside, go again.
            place = layout.cell_at(exc.raw_line)
            if place is None:
                raise InternalError(f"the cells do not parse together: {exc.message}") from None
            code, line = place
            message = exc.message.removeprefix("parser error: ").splitlines()[0]
            _set_aside(code, (line, exc.raw_column + 1, message), plan, path, migration)
            continue
        break
    if result.code != module:
        _check_reproduced(module, layout)
    for finding in result.findings:
        place = layout.cell_at(finding.span.line)
        if place is None:
            continue
        code, _ = place
        start = layout.starts[layout.cells.index(code)]
        migration.findings.append(_in_cell(finding, path, code.number, lambda n, s=start: n - s + 1))
    _split_module(result.code, layout, names)


def _check_reproduced(module: str, layout: ModuleLayout) -> None:
    """LibCST does not print every text back exactly; a cell it would change is refused."""
    import libcst as cst

    reproduced = cst.parse_module(module).code
    if reproduced == module:
        return
    old, new = split_lines(module), split_lines(reproduced)
    line = next((i for i, (a, b) in enumerate(zip(old, new), start=1) if a != b), min(len(old), len(new)) + 1)
    place = layout.cell_at(line)
    where = f"cell {place[0].number}:{place[1]}:1" if place else f"line {line}"
    raise NotebookError(
        f"{where}: the parser would not keep this line exactly (comments after the last statement of a "
        "block?), so the rewrite could lose it: move or remove the text there and run again"
    )


def _split_module(code: str, layout: ModuleLayout, names: Placeholders) -> None:
    """Cut the migrated module back into cells; imports added above the first cell move to the cell
    that holds the imports."""
    lines = split_lines(code)
    if not lines or _body(lines[0]) != names.module_import:
        raise NotebookError("internal error: the module the cells form lost its first line")
    marks = {names.cell(c.number): c for c in layout.cells}
    positions: list[tuple[int, CodeCell]] = []
    end = len(lines)
    for index, line in enumerate(lines):
        body = _body(line)
        if body in marks:
            positions.append((index, marks.pop(body)))
        elif body == names.end:
            end = index
            break
    if marks or [c for _, c in positions] != layout.cells:
        raise NotebookError("internal error: the cells of the notebook came back out of order")
    for (index, cell), (following, _) in zip(positions, [*positions[1:], (end, None)]):
        cell.output = lines[index + 1 : following]
    prelude = _strip_blank(lines[1 : positions[0][0]])
    if prelude:
        _place_prelude(prelude, layout.cells, names)


def _strip_blank(lines: list[str]) -> list[str]:
    start, stop = 0, len(lines)
    while start < stop and not lines[start].strip():
        start += 1
    while stop > start and not lines[stop - 1].strip():
        stop -= 1
    return lines[start:stop]


def _place_prelude(prelude: list[str], cells: list[CodeCell], names: Placeholders) -> None:
    """Imports (and start-up settings) the rules added go to the first cell that held imports, after
    what is left of its import block; with no such cell, above the first statement of the first
    cell with code."""
    target = next((c for c in cells if _has_imports("".join(c.masked))), None)
    if target is None:
        target = next((c for c in cells if _after_imports(c.output, names)[1]), cells[-1])
    index, _ = _after_imports(target.output, names)
    ends_in_block = prelude[-1][:1] in (" ", "\t")
    # An added helper function sits two blank lines below the imports, as in a module.
    lead = ["\n", "\n"] if index and _DEFINITION.match(prelude[0]) else []
    target.output[index:index] = [*lead, *prelude, *_gap_before(target.output[index:], ends_in_block)]


_DEFINITION = re.compile(r"(async\s+def|def|class)\b|@")


def _gap_before(rest: list[str], after_definition: bool = False) -> list[str]:
    """Blank lines between added imports and the code right below them, as the engine sets them
    in a module (PEP 8: two before a def or class, and two after an added helper function)."""
    if after_definition:
        blank = next((i for i, line in enumerate(rest) if line.strip()), len(rest))
        return ["\n"] * max(0, 2 - blank) if blank < len(rest) else []
    if not rest or not rest[0].strip() or rest[0].lstrip().startswith("#"):
        return []
    return ["\n"] * (2 if re.match(r"(async\s+def|def|class|@)\b|@", rest[0]) else 1)


def _has_imports(text: str) -> bool:
    try:
        return any(isinstance(s, (ast.Import, ast.ImportFrom)) for s in ast.parse(text).body)
    except SyntaxError:
        return False


def _after_imports(lines: list[str], names: Placeholders) -> tuple[int, bool]:
    """Where added imports go in these cell lines: after the leading imports and IPython lines, and
    whether a statement of another kind follows them."""
    index = 0
    for position, statement in enumerate(ast.parse("".join(lines)).body):
        docstring = position == 0 and _is_docstring(statement)
        if not (docstring or _is_placeholder(statement, names) or isinstance(statement, (ast.Import, ast.ImportFrom))):
            return index, True
        index = statement.end_lineno
    return index, False


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _is_placeholder(statement: ast.stmt, names: Placeholders) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Name)
        and statement.value.func.id.startswith(names.base)
    )


def _migrate_written_python(code: CodeCell, path: str, plan, no_comments: bool, migration: Migration) -> None:
    """``%%writefile train.py``: the body is a script of its own, migrated as that file would be."""
    import libcst as cst

    from neuron_migrate.migrate.engine import migrate_python

    body = "".join(code.lines[1:])
    try:
        result = migrate_python(body, code.written_path, plan, no_comments=no_comments)
    except cst.ParserSyntaxError as exc:
        problem = _syntax_problem(body) or (exc.raw_line, exc.raw_column + 1, exc.message.splitlines()[0])
        line, column, message = problem
        _set_aside(code, (line + 1, column, message), plan, path, migration)
        return
    for finding in result.findings:
        migration.findings.append(_in_cell(finding, path, code.number, lambda n: n + 1))
    if result.code != body:
        code.body = result.code


def _migrate_written_requirements(code: CodeCell, path: str, plan, no_comments: bool, migration: Migration) -> None:
    """``%%writefile requirements.txt``: the body is a requirements file, migrated as that file would be
    (the notebook's own ``%pip`` lines go through the same package table in the shell pass)."""
    from neuron_migrate.migrate.requirements import migrate_requirements_text

    body = "".join(code.lines[1:])
    text, findings = migrate_requirements_text(body, code.written_path, plan, no_comments)
    for finding in findings:
        migration.findings.append(_in_cell(finding, path, code.number, lambda n: n + 1))
    if text != body:
        code.body = text


# ----- the shell pass -----------------------------------------------------------------------------


@dataclass
class Fragment:
    """One piece of the notebook's shell script: a command region of a cell, or a %%bash body."""

    code: CodeCell
    region: Region | None
    lines: list[str]  # as given to the shell rules, without line endings
    offsets: list[int]  # per line: columns the cell has in front of the shell text


def _fragments(cells: list[CodeCell]) -> list[Fragment]:
    fragments = []
    for code in cells:
        if code.mode == SHELL_BODY:
            body = [_body(line) for line in code.lines[1:]]
            fragments.append(Fragment(code, None, body, [0] * len(body)))
        elif code.mode == NAMESPACE:
            for region in code.regions:
                if region.kind in (SHELL, ENV):
                    fragments.append(_region_fragment(code, region))
    return fragments


_EXPORT = "export "


def _region_fragment(code: CodeCell, region: Region) -> Fragment:
    lines, offsets = [], []
    for index in range(region.first, region.command):
        body = _body(code.lines[index])
        lines.append(body.lstrip(" \t"))
        offsets.append(len(body) - len(body.lstrip(" \t")))
    command = _body(code.lines[region.command])
    if region.kind == ENV:
        env = region.env
        lines.append(f"{_EXPORT}{env['name']}={shlex.quote(env['value'])}")
        # columns of the name onward line up with the %env line
        offsets.append(len(region.indent) + env.start("name") - len(_EXPORT))
    else:
        lines.append(command[len(region.indent) + len(region.prefix) :])
        offsets.append(len(region.indent) + len(region.prefix))
    for index in range(region.command + 1, region.last):
        lines.append(_body(code.lines[index]))
        offsets.append(0)
    return Fragment(code, region, lines, offsets)


def _shell_pass(cells, names, path, plan, no_comments: bool, migration: Migration) -> None:
    fragments = _fragments(cells)
    files = [c for c in cells if c.mode == SHELL_FILE]
    if not fragments and not files:
        return
    from neuron_migrate.migrate.shell import migrate_shell_text

    python = _python_of(cells)
    if fragments:
        script_lines: list[str] = []
        starts = []
        for number, fragment in enumerate(fragments):
            script_lines.append(names.fragment(number))
            starts.append(len(script_lines) + 1)
            script_lines.extend(fragment.lines)
        script = "\n".join(script_lines) + "\n"
        written = {
            os.path.normpath(c.written_path): c.body if c.body is not None else "".join(c.lines[1:])
            for c in cells
            if c.mode == PYTHON_FILE
        }
        result = migrate_shell_text(script, path, plan, no_comments=no_comments, cell=None, files=written, python=python)
        outputs = _split_script(result.text, len(fragments), names)
        dropped: set[int] = set()
        for number, (fragment, output) in enumerate(zip(fragments, outputs)):
            if output != fragment.lines and not _apply_fragment(fragment, output):
                dropped.add(number)
        for finding in result.findings:
            number = _fragment_at(starts, fragments, finding.span.line)
            if number is None or number in dropped:
                continue
            migration.findings.append(_fragment_finding(finding, fragments[number], starts[number], path))
    for code in files:
        body = "".join(code.lines[1:])
        # a script file of its own, not notebook lines: the shell rules see it as one
        result = migrate_shell_text(body, code.written_path, plan, no_comments=no_comments, python=python)
        for finding in result.findings:
            migration.findings.append(_in_cell(finding, path, code.number, lambda n: n + 1))
        if result.text != body:
            code.body = result.text


def _python_of(cells: list[CodeCell]) -> str:
    """The notebook's Python as written: its code cells (IPython lines masked) and the Python files
    its cells write, in order."""
    parts = []
    for code in cells:
        if code.mode == NAMESPACE and not code.set_aside:
            parts.append("".join(code.masked))
        elif code.mode == PYTHON_FILE:
            parts.append("".join(code.lines[1:]))
    return "\n".join(parts)


def _split_script(text: str, count: int, names: Placeholders) -> list[list[str]]:
    outputs: list[list[str]] = []
    before: list[str] = []
    expected = 0
    for line in map(_body, split_lines(text)):
        if line == names.fragment(expected):
            outputs.append([])
            expected += 1
        elif outputs:
            outputs[-1].append(line)
        else:
            # Something the rules put above the first command belongs to it.
            before.append(line)
    if expected != count:
        raise NotebookError("internal error: the shell commands of the notebook came back out of order")
    outputs[0][:0] = _strip_blank(before)
    return outputs


def _fragment_at(starts: list[int], fragments: list[Fragment], line: int) -> int | None:
    for number, start in enumerate(starts):
        if start <= line < start + len(fragments[number].lines):
            return number
    return None


def _fragment_finding(finding: Finding, fragment: Fragment, start: int, path: str) -> Finding:
    def line_of(line: int) -> int:
        within = line - start  # 0-based line of the fragment
        if fragment.region is None:
            return within + 2  # below the %%bash line
        return fragment.region.first + within + 1

    def column_of(line: int, column: int) -> int:
        within = min(max(line - start, 0), len(fragment.offsets) - 1)
        return max(column + fragment.offsets[within], 1)

    return _in_cell(finding, path, fragment.code.number, line_of, column_of)


def _apply_fragment(fragment: Fragment, output: list[str]) -> bool:
    """Record what a fragment became in the notebook's own syntax; False when it cannot be said
    there (the fragment then stays as it was and its findings are dropped)."""
    code = fragment.code
    if fragment.region is None:
        code.body = "\n".join(output) + ("\n" if output else "")
        return True
    lines = _as_magic_lines(fragment, output)
    if lines is None:
        return False
    code.replacements[fragment.region.number] = lines
    return True


def _as_magic_lines(fragment: Fragment, output: list[str]) -> list[str] | None:
    """Shell lines back into cell lines: lines the rules kept are the cell's own lines, comments stay
    comments, ``export X=1`` becomes ``%env X=1`` (the form whose setting lasts for later commands)
    and commands get their ``!`` back."""
    region, cell_lines = fragment.region, fragment.code.lines
    original = _body(cell_lines[region.command]).lstrip(" \t")
    kept = {text: _body(cell_lines[region.first + i]) for i, text in enumerate(fragment.lines)}
    lines: list[str] = []
    continued = False
    for line in output:
        if line in kept:
            lines.append(kept[line])
            continued = line.endswith("\\") and not line.lstrip().startswith("#")
            continue
        if continued:
            lines.append(line)
            continued = line.endswith("\\")
            continue
        stripped = line.strip()
        if not stripped:
            lines.append("")
            continue
        if stripped.startswith("#"):
            lines.append(region.indent + stripped)
            continue
        exported = _standalone_export(stripped)
        if region.kind == ENV:
            if exported is None:
                return None
            lines.append(region.indent + _env_line(region.env, *exported))
            continue
        if exported is not None and not original[len(region.prefix) :].lstrip().startswith("export"):
            lines.append(f"{region.indent}%env {exported[0]}={exported[1]}")
            continue
        prefix = region.prefix
        if prefix == "%" and stripped.split()[0] not in _PACKAGE_MAGICS:
            prefix = "!"
        lines.append(region.indent + prefix + line.lstrip(" \t"))
        continued = line.endswith("\\")
    return lines


def _standalone_export(line: str) -> tuple[str, str] | None:
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return None
    if len(words) != 2 or words[0] != "export":
        return None
    name, sep, value = words[1].partition("=")
    return (name, value) if sep and name.isidentifier() else None


def _env_line(original: re.Match, name: str, value: str) -> str:
    separator = original["sep"] if name == original["name"] else "="
    return f"%{original['magic']} {name}{separator}{value}"


# ----- assembling the cells -----------------------------------------------------------------------


def _new_source(code: CodeCell, names: Placeholders) -> str | None:
    if code.mode == SHELL_BODY or code.mode in WRITTEN_FILES:
        if code.body is None:
            return None
        return _in_cell_newlines(code.cell.source, _keep_ending(code.lines[0], code.body, "".join(code.lines[1:])))
    if code.mode != NAMESPACE:
        return None
    lines = code.output if code.output is not None else list(code.masked)
    regions = {region.number: region for region in code.regions}
    out: list[str] = []
    emitted: set[int] = set()
    for line in lines:
        number = names.region_number(line)
        if number is None:
            out.append(line)
            continue
        if number in emitted or number not in regions:
            continue
        emitted.add(number)
        out.extend(_region_lines(code, regions[number]))
    if emitted != set(regions):
        raise NotebookError(f"internal error: cell {code.number} lost an IPython line")
    # The cell's last line, an IPython line without a final newline, may now have lines after it (imports
    # the rules added go below the cell's imports and IPython lines).
    out = [line if line.endswith(("\n", "\r")) or i == len(out) - 1 else line + "\n" for i, line in enumerate(out)]
    text = _in_cell_newlines(code.cell.source, "".join(out).rstrip())
    original = code.cell.source
    # Keep the cell's own ending (the module gave every cell a final newline); a cell whose every
    # statement went is left empty rather than blank.
    return text + original[len(original.rstrip()) :] if text else ""


def _in_cell_newlines(original: str, text: str) -> str:
    """A cell written with "\r\n" only keeps them on the lines the rules added with "\n"."""
    if "\r\n" in original and original.count("\n") == original.count("\r\n"):
        return re.sub(r"(?<!\r)\n", "\r\n", text)
    return text


def _keep_ending(header: str, body: str, old_body: str) -> str:
    if not old_body.endswith(("\n", "\r")):
        body = body.rstrip("\r\n")
    return header + body


def _region_lines(code: CodeCell, region: Region) -> list[str]:
    original = code.lines[region.first : region.last]
    new = code.replacements.get(region.number)
    if new is None:
        return original
    newline = _ending(original[0]) or "\n"
    final = _ending(original[-1])
    return [line + (newline if i < len(new) - 1 else final) for i, line in enumerate(new)]


# ----- the adapter --------------------------------------------------------------------------------


def python_cells(data: bytes, path: str = "") -> list[tuple[int, str]]:
    """(cell number, Python text) of each code cell whose Python runs in the notebook, IPython lines
    replaced by placeholder lines of the same count: what the audit scans. Raises NotebookError."""
    notebook = read_notebook(data)
    if not is_python_notebook(notebook.data):
        return []
    names = Placeholders(notebook.text)
    numbers = iter(range(1, 1 << 30))
    cells = (classify(cell, names, numbers, path) for cell in notebook.cells if cell.cell_type == "code")
    return [(code.number, "".join(code.masked)) for code in cells if code.mode == NAMESPACE]


def rewrite_notebook(data: bytes, path: str, plan: RulePlan, no_comments: bool) -> Outcome:
    """One notebook, on the one outcome path (see sources.guarded)."""
    return guarded(lambda: _rewrite_notebook(data, path, plan, no_comments))


def _rewrite_notebook(data: bytes, path: str, plan: RulePlan, no_comments: bool) -> Outcome:
    notebook = read_notebook(data)
    if not is_python_notebook(notebook.data):
        return Outcome(UNCHANGED)
    migration = migrate_notebook(notebook, path, plan, no_comments)
    if not migration.sources:
        return Outcome(UNCHANGED, None, migration.findings)
    text = splice_sources(notebook, migration.sources)
    check_splice(notebook, text, migration.sources)
    output = (codecs.BOM_UTF8 if notebook.bom else b"") + text.encode("utf-8")
    by_number = {cell.number: cell for cell in notebook.cells}
    diff = "".join(
        cell_diff(path, number, by_number[number].source, source)
        for number, source in sorted(migration.sources.items())
    )
    return Outcome(CHANGED, output, migration.findings, diff=diff)
