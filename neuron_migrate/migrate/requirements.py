"""Adapters for dependency files: requirements files, pyproject.toml, setup.cfg and environment.yml.

Each adapter finds the dependencies of its format, asks the requirement rules (their dependency
table, through the registry) what becomes of each one, and edits only those: every other byte of the file (comments, order, spacing, line
continuations, includes, newline style, a missing final newline) stays as it was. A review or
manual edit gets a one-line marker comment above the dependency, at its indentation.

requirements files, setup.cfg and environment.yml are edited line by line (pip, configparser and
YAML all read them that way). pyproject.toml is edited with tomlkit, which keeps the document's
formatting; markers are then placed next to the edited items in the text tomlkit writes back.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from neuron_migrate.migrate.sources import SourceError, decode_text, text_adapter
from neuron_migrate.report.model import REVIEW, SAFE, Span
from neuron_migrate.ruleapi import hooks_for, rule_with_role
from neuron_migrate.ruleapi.reporter import Reporter

if TYPE_CHECKING:
    from neuron_migrate.migrate.engine import RulePlan
    from neuron_migrate.rules.requirements import Change, Requirement, Stack


def _dependencies():
    """The requirement rules' dependency table (parsers and what becomes of each dependency), see
    ruleapi.KIND_HOOKS; the registry loads the rules on first use."""
    return hooks_for("requirements")


class _BadFile(SourceError):
    """The file is not valid in its own format: reported, left untouched."""


def _text_migration(edit: Callable[[str, str, _FileEdit], str]):
    """A text -> text edit as ``migrate(text, path, plan, no_comments) -> (new text, findings)``."""

    def migrate(text: str, path: str, plan: RulePlan, no_comments: bool) -> tuple[str, list]:
        state = _FileEdit(path, plan, no_comments, text)
        new = edit(text, path, state)
        state.findings.sort(key=lambda f: (f.span.line, f.span.column))
        return new, state.findings

    return migrate


def _adapter(edit: Callable[[str, str, _FileEdit], str], cookie: bool = False):
    """Wraps a text -> text edit into an adapter on the one outcome path (see sources.guarded)."""
    adapter = text_adapter(lambda data: decode_text(data, cookie), _text_migration(edit))
    adapter.__name__ = f"rewrite_{edit.__name__.lstrip('_')}"
    adapter.__doc__ = edit.__doc__
    return adapter


# ----- findings and markers -------------------------------------------------------------------


@dataclass
class _FileEdit:
    """One file's rule selection, suppression comments, findings and whether anything changed."""

    path: str
    plan: RulePlan
    no_comments: bool
    text: str
    changed: bool = False

    def __post_init__(self) -> None:
        self.metas = {rule.meta.id: rule.meta for rule in self.plan.index.rules}
        self.selected = frozenset(self.metas)
        self.reporter = Reporter(self.path, self.text)
        self.findings = self.reporter.findings

    def stack(self, requirements, index_urls: bool) -> Stack:
        return _dependencies().stack_of(requirements, index_urls=index_urls, selected=self.selected)

    def decide(self, requirement: Requirement, stack: Stack, lines: range, span: Span) -> Change | None:
        """What becomes of ``requirement`` (on 1-based ``lines``), a suppressed finding if a comment
        says to leave it, or None."""
        known = set(stack.present)
        change = _dependencies().plan_change(requirement, stack)
        if change is None:
            return None
        if self.reporter.suppresses(change.rule, lines):
            stack.present = known
            self.reporter.skipped(self.metas[change.rule], span, requirement.written)
            return None
        return change

    def apply(self, change: Change, requirement: Requirement, span: Span, after: tuple[str, ...]) -> list[str]:
        """Record a change (applied unless it keeps the requirement); the marker comments (without '# ') to put
        above it."""
        self.changed = self.changed or not change.kept
        marker = self.reporter.report(
            self.metas[change.rule],
            span,
            change.message,
            change.safety,
            applied=not change.kept,
            before=requirement.written,
            after="\n".join(after),
            fix="" if change.safety == SAFE else change.marker,
            marker=change.marker,
        )
        return [marker] if marker else []

    def note(self, rule: str, message: str, span: Span, before: str, marker: str) -> list[str]:
        """A finding of one of the rules that only put a marker (the index and hash rules)."""
        meta = self.metas[rule]
        return [
            self.reporter.report(meta, span, message, meta.safety, applied=True, before=before, fix=marker, marker=marker)
        ]

    def mark(self, role: str, lines: range, span: Span, before: str) -> list[str] | None:
        """The marker of the rule playing ``role``, one that only puts a marker (the Neuron index and
        hash rules); None when that rule is not selected or a comment suppresses it."""
        rule = rule_with_role(role)
        if rule is None or not self.wants(rule.meta.id, lines, span, before):
            return None
        return self.note(rule.meta.id, rule.meta.title, span, before, rule.MARKER)

    def wants(self, rule: str, lines: range, span: Span, before: str) -> bool:
        if rule not in self.selected:
            return False
        if self.reporter.suppresses(rule, lines):
            self.reporter.skipped(self.metas[rule], span, before)
            return False
        return True


def _marker_lines(markers: list[str], indent: str, above: list[str], no_comments: bool) -> list[str]:
    """``# marker`` lines (no newline) not already among the comment lines ``above``."""
    if no_comments:
        return []
    present = {line.strip() for line in above}
    out = []
    for marker in markers:
        line = f"# {marker}"
        if line not in present:
            present.add(line)
            out.append(indent + line)
    return out


def _comments_above(lines: list[str], index: int) -> list[str]:
    """The comment-only lines directly above ``lines[index]``."""
    out = []
    while index > 0 and lines[index - 1].lstrip().startswith("#"):
        index -= 1
        out.append(lines[index])
    return out


def _newline(text: str) -> str:
    match = re.search(r"\r\n|\r|\n", text)
    return match.group(0) if match else "\n"


def _split_newline(line: str) -> tuple[str, str]:
    body = line.rstrip("\r\n")
    return body, line[len(body) :]


# ----- line-based files -----------------------------------------------------------------------


@dataclass
class _Piece:
    """One physical line of an entry: ``prefix`` + ``body`` (what the format calls the value) +
    ``closing`` (a closing quote) + ``comment`` + ``cont`` (a line continuation) + ``nl``."""

    prefix: str
    body: str
    closing: str = ""
    comment: str = ""
    cont: str = ""
    nl: str = ""

    def text(self) -> str:
        return self.prefix + self.body + self.closing + self.comment + self.cont + self.nl


@dataclass
class _Entry:
    """One dependency (or index option) and the physical lines it spans, from ``first``."""

    first: int
    pieces: list[_Piece]
    requirement: Requirement | None = None
    index_url: bool = False
    cuda_index: tuple[int, int] | None = None  # where a CUDA wheel index URL is in the first body (--from cuda)
    extra_prefix: str = ""  # starts each added line
    marker_indent: str = ""
    removed_line: str | None = None  # what stays of the line when the requirement goes (a setup.cfg key)

    @property
    def lines(self) -> range:
        return range(self.first + 1, self.first + len(self.pieces) + 1)

    def span(self) -> Span:
        piece = self.pieces[0]
        if self.requirement is None:
            column = len(piece.prefix) + len(piece.body) - len(piece.body.lstrip())
            return Span(self.first + 1, column + 1, self.first + 1, len(piece.prefix) + len(piece.body) + 1)
        start = len(piece.prefix) + self.requirement.start
        return Span(self.first + 1, start + 1, self.first + 1, len(piece.prefix) + self.requirement.marker_end + 1)

    def before(self) -> str:
        if self.requirement is not None:
            return self.requirement.written
        return self.pieces[0].body.strip()


def _rewrite_entries(text: str, entries: list[_Entry], state: _FileEdit) -> str:
    """Decide every entry's change, then write the file with only those entries' lines replaced."""
    lines = text.splitlines(keepends=True)
    nl = _newline(text)
    requirements = [e.requirement for e in entries if e.requirement is not None]
    stack = state.stack(requirements, index_urls=any(e.index_url for e in entries))
    replaced: dict[int, list[str]] = {}
    for entry in entries:
        if entry.requirement is not None:
            new = _migrate_entry(entry, stack, state, lines, nl)
            if new is not None:
                replaced[entry.first] = new
    for entry in entries:
        if entry.cuda_index is not None:
            new = _cuda_index_entry(entry, state, lines, nl)
            if new is not None:
                replaced[entry.first] = new
    if state.changed:
        for entry in entries:
            markers = state.mark("neuron-index", entry.lines, entry.span(), entry.before()) if entry.index_url else None
            if markers is not None:
                head = _marker_lines(
                    markers, entry.marker_indent, _comments_above(lines, entry.first), state.no_comments
                )
                if head:
                    replaced[entry.first] = [line + nl for line in head] + [p.text() for p in entry.pieces]
    if not replaced:
        return text
    out = []
    spans = {e.first: len(e.pieces) for e in entries}
    index = 0
    while index < len(lines):
        if index in replaced:
            out.extend(replaced[index])
            index += spans[index]
        else:
            out.append(lines[index])
            index += 1
    new_text = "".join(out)
    if not text.endswith(("\n", "\r")):
        new_text = re.sub(r"(\r\n|\r|\n)$", "", new_text)
    return new_text


def _migrate_entry(entry: _Entry, stack: Stack, state: _FileEdit, lines: list[str], nl: str) -> list[str] | None:
    """The lines that replace ``entry``, or None when it stays."""
    requirement = entry.requirement
    change = state.decide(requirement, stack, entry.lines, entry.span())
    if change is None:
        return None
    first = entry.pieces[0]
    suffix = first.body[requirement.end : requirement.marker_end]
    after = tuple(r + suffix for r in change.replacement)
    markers = state.apply(change, requirement, entry.span(), after)
    if change.kept:
        head = _marker_lines(markers, entry.marker_indent, _comments_above(lines, entry.first), state.no_comments)
        return [line + nl for line in head] + [p.text() for p in entry.pieces] if head else None
    hashed = any("--hash" in p.body for p in entry.pieces)
    if hashed and change.replacement:
        markers += state.mark("requirement-hashes", entry.lines, entry.span(), entry.before()) or []
    head = _marker_lines(markers, entry.marker_indent, _comments_above(lines, entry.first), state.no_comments)
    body: list[str] = []
    if change.replacement:
        body = _kept_pieces(
            entry, first.body[: requirement.start] + change.replacement[0] + first.body[requirement.end :]
        )
        body += [entry.extra_prefix + r + suffix + first.closing for r in change.replacement[1:]]
    elif entry.removed_line is not None:
        body = [entry.removed_line]
    out = head + body
    if not out:
        return []
    last_nl = entry.pieces[-1].nl
    return [line + nl for line in out[:-1]] + [out[-1] + last_nl]


def _cuda_index_entry(entry: _Entry, state: _FileEdit, lines: list[str], nl: str) -> list[str] | None:
    """``--extra-index-url https://download.pytorch.org/whl/cu121`` -> ``.../whl/cpu`` (a --from cuda rule)."""
    table = _dependencies()
    rule, before = table.cuda_index_rule, entry.before()
    if not state.wants(rule, entry.lines, entry.span(), before):
        return None
    first = entry.pieces[0]
    start, end = entry.cuda_index
    url = first.body[start:end]
    new = table.cuda_index(url)
    state.changed = True
    markers = [
        state.reporter.report(
            state.metas[rule], entry.span(), f"{url} -> {new}", REVIEW, applied=True, before=before, after=new,
            fix=table.cuda_index_review, marker=table.cuda_index_review,
        )
    ]  # fmt: skip
    head = _marker_lines([m for m in markers if m], entry.marker_indent, _comments_above(lines, entry.first),
                         state.no_comments)  # fmt: skip
    first_line = replace(first, body=first.body[:start] + new + first.body[end:]).text()
    return [line + nl for line in head] + [first_line] + [p.text() for p in entry.pieces[1:]]


def _kept_pieces(entry: _Entry, new_body: str) -> list[str]:
    """The entry's lines with the first body replaced and every ``--hash`` option dropped (they
    belonged to the old requirement); continuation lines left empty by that go too."""
    pieces = [(entry.pieces[0], _without_hashes(new_body))]
    pieces += [(p, _without_hashes(p.body)) for p in entry.pieces[1:]]
    kept = [(p, body) for i, (p, body) in enumerate(pieces) if i == 0 or body.strip() or p.comment.strip()]
    out = []
    for i, (piece, body) in enumerate(kept):
        cont = (piece.cont or " \\") if i < len(kept) - 1 else ""
        out.append(piece.prefix + body + piece.closing + piece.comment + cont)
    return out


def _without_hashes(body: str) -> str:
    return re.sub(r"\s*--hash(?:=|\s+)\S+", "", body)


# requirements files ------------------------------------------------------------------------------

_COMMENT = re.compile(r"(?:^|(?<=\s))#")
_EDITABLE = re.compile(r"(?:-e|--editable)(?:\s*=\s*|\s+)")
_INDEX_OPTION = re.compile(r"\s*(?:-i|--index-url|--extra-index-url)(?:\s*=\s*|\s+)(\S+)")


def _physical(line: str, continued: bool) -> _Piece:
    raw, nl = _split_newline(line)
    cont = ""
    if continued:
        cont = re.search(r"\s*\\$", raw).group(0)
        raw = raw[: len(raw) - len(cont)]
    comment = _COMMENT.search(raw)
    body, comment_text = (raw[: comment.start()], raw[comment.start() :]) if comment else (raw, "")
    # the comment keeps the spaces before it, the prefix the indentation
    stripped = body.rstrip()
    comment_text = body[len(stripped) :] + comment_text
    indent = stripped[: len(stripped) - len(stripped.lstrip())]
    return _Piece(indent, stripped[len(indent) :], comment=comment_text, cont=cont, nl=nl)


def _logical_lines(lines: list[str]):
    """(first index, pieces) per logical line: a line ending in a backslash continues on the next,
    unless it is a comment line (pip's rule)."""
    index = 0
    while index < len(lines):
        first, pieces = index, []
        while True:
            raw = _split_newline(lines[index])[0]
            continued = raw.endswith("\\") and not raw.lstrip().startswith("#") and index + 1 < len(lines)
            pieces.append(_physical(lines[index], continued))
            index += 1
            if not continued:
                break
        yield first, pieces


def _requirement_entry(first: int, pieces: list[_Piece]) -> _Entry | None:
    body = pieces[0].body
    indent = pieces[0].prefix
    if not body:
        return None
    if any(p.body and not p.body.startswith("-") for p in pieces[1:]):
        return None  # a requirement split over lines: left alone
    editable = _EDITABLE.match(body)
    if body.startswith("-") and not editable:
        match = _INDEX_OPTION.match(body)
        if match and _dependencies().is_neuron_index(match.group(1)):
            return _Entry(first, pieces, index_url=True, marker_indent=indent)
        if match and _dependencies().cuda_index(match.group(1)) is not None:
            return _Entry(first, pieces, cuda_index=match.span(1), marker_indent=indent)
        return None
    start = editable.end() if editable else 0
    # options (--hash, --config-settings...) start at the first word beginning with "-"
    option = re.compile(r"\s-").search(body, start)
    requirement = _dependencies().parse_requirement(body, start, option.start() if option else len(body))
    if requirement is None:
        return None
    if editable:  # "-e git+...#egg=x" is replaced as a whole
        requirement = replace(requirement, start=0)
    return _Entry(first, pieces, requirement, extra_prefix=indent, marker_indent=indent)


def _requirements(text: str, path: str, state: _FileEdit) -> str:
    """A pip requirements or constraints file."""
    lines = text.splitlines(keepends=True)
    entries = [e for first, pieces in _logical_lines(lines) if (e := _requirement_entry(first, pieces))]
    return _rewrite_entries(text, entries, state)


# setup.cfg ----------------------------------------------------------------------------------------

_SETUP_KEYS = {"options": ("install_requires", "setup_requires", "tests_require")}
_SECTION = re.compile(r"\s*\[([^\]]+)\]")
_KEY = re.compile(r"([A-Za-z0-9_.-]+)(\s*[=:]\s*)(.*)$")


def _setup_cfg(text: str, path: str, state: _FileEdit) -> str:
    """setup.cfg: ``[options] install_requires`` (and setup_requires, tests_require) and every
    list of ``[options.extras_require]``, one requirement per line."""
    _check_setup_cfg(text)
    lines = text.splitlines(keepends=True)
    entries: list[_Entry] = []
    section, in_value = "", False
    for index, line in enumerate(lines):
        raw, nl = _split_newline(line)
        if raw.strip().startswith(("#", ";")):
            continue
        header = _SECTION.match(raw) if raw[:1] not in " \t" else None
        if header:
            section, in_value = header.group(1).strip().lower(), False
            continue
        if raw[:1] not in " \t" and raw.strip():
            key = _KEY.match(raw)
            in_value = bool(key) and _lists_requirements(section, key.group(1))
            if in_value and key.group(3).strip():
                prefix = raw[: key.start(3)]
                entry = _cfg_entry(index, prefix, key.group(3), nl, "    ", "")
                if entry:
                    entry.removed_line = prefix.rstrip()
                    entries.append(entry)
            continue
        if in_value and raw.strip():
            indent = raw[: len(raw) - len(raw.lstrip())]
            entry = _cfg_entry(index, indent, raw[len(indent) :], nl, indent, indent)
            if entry:
                entries.append(entry)
    return _rewrite_entries(text, entries, state)


def _lists_requirements(section: str, key: str) -> bool:
    return section == "options.extras_require" or key.lower() in _SETUP_KEYS.get(section, ())


def _cfg_entry(index: int, prefix: str, value: str, nl: str, extra: str, indent: str) -> _Entry | None:
    body = value.rstrip()
    requirement = _dependencies().parse_requirement(body)
    if requirement is None:
        return None
    piece = _Piece(prefix, body, comment=value[len(body) :], nl=nl)
    return _Entry(index, [piece], requirement, extra_prefix=extra, marker_indent=indent)


def _check_setup_cfg(text: str) -> None:
    import configparser

    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.MissingSectionHeaderError as exc:
        raise _BadFile(f"{exc.lineno}:1: not a setup.cfg file: text before the first [section]") from None
    except configparser.ParsingError as exc:
        line = exc.errors[0][0] if getattr(exc, "errors", None) else 1
        raise _BadFile(f"{line}:1: setup.cfg does not parse: {exc.message.splitlines()[0]}") from None
    except configparser.Error as exc:
        raise _BadFile(f"1:1: setup.cfg does not parse: {exc}") from None


# environment.yml ----------------------------------------------------------------------------------

_ITEM = re.compile(r"(?P<indent>\s*)-(?P<gap>\s+)(?P<rest>.*)$")
_TOP_KEY = re.compile(r"[^\s#-]")


def _conda_env(text: str, path: str, state: _FileEdit) -> str:
    """A conda environment file: the ``dependencies:`` list (conda match specs) and its ``- pip:``
    sub-list (pip requirement lines, options included)."""
    lines = text.splitlines(keepends=True)
    entries: list[_Entry] = []
    inside, pip_indent = False, None
    for index, line in enumerate(lines):
        raw, nl = _split_newline(line)
        if _TOP_KEY.match(raw):
            inside = re.match(r"dependencies\s*:\s*(#.*)?$", raw) is not None
            pip_indent = None
            continue
        item = _ITEM.match(raw) if inside else None
        if item is None:
            continue
        indent = len(item.group("indent"))
        if pip_indent is not None and indent <= pip_indent:
            pip_indent = None
        rest = item.group("rest")
        if re.match(r"pip\s*:\s*(#.*)?$", rest):
            pip_indent = indent
            continue
        entry = _yaml_entry(index, item, nl, pip=pip_indent is not None)
        if entry:
            entries.append(entry)
    return _rewrite_entries(text, entries, state)


def _yaml_entry(index: int, item: re.Match, nl: str, pip: bool) -> _Entry | None:
    rest = item.group("rest")
    quote = rest[:1] if rest[:1] in "'\"" else ""
    if quote:
        close = rest.find(quote, 1)
        if close < 0:
            return None
        value, after = rest[1:close], rest[close + 1 :]
    else:
        comment = re.search(r"\s+#", rest)
        value = rest[: comment.start()] if comment else rest.rstrip()
        after = rest[len(value) :]
    prefix = item.group("indent") + "-" + item.group("gap") + quote
    piece = _Piece(prefix, value, closing=quote, comment=after, nl=nl)
    entry = _Entry(index, [piece], extra_prefix=prefix, marker_indent=item.group("indent"))
    if pip and value.startswith("-"):
        match = _INDEX_OPTION.match(value)
        entry.index_url = bool(match and _dependencies().is_neuron_index(match.group(1)))
        return entry if entry.index_url else None
    if pip:
        option = re.search(r"\s-", value)
        entry.requirement = _dependencies().parse_requirement(value, 0, option.start() if option else len(value))
    else:
        entry.requirement = _dependencies().conda_requirement(value)
    return entry if entry.requirement else None


# ----- pyproject.toml --------------------------------------------------------------------------

_SENTINEL = "@@neuron-migrate-{}@@"


@dataclass
class _Site:
    """A dependency inside the TOML document: an array item or a Poetry table key."""

    container: object
    slot: object  # index in the array, or key in the table
    requirement: Requirement
    value: object  # the tomlkit item
    poetry: bool = False
    line: int = 0  # 0-based, in the original text


@dataclass
class _Pending:
    """A sentinel left in the document where a marker or a removed item has to go."""

    final: str | None  # the item text that replaces the sentinel; None = the item goes
    markers: list[str] = field(default_factory=list)
    whole_line: bool = False  # a removed Poetry key: its line goes


def _pyproject(text: str, path: str, state: _FileEdit) -> str:
    """pyproject.toml: ``[project] dependencies``, ``[project.optional-dependencies]``,
    ``[dependency-groups]`` and Poetry's dependency tables."""
    import tomlkit
    from tomlkit.exceptions import ParseError

    try:
        doc = tomlkit.parse(text)
    except ParseError as exc:
        raise _BadFile(f"{exc.line}:{exc.col}: invalid TOML: {str(exc).split(' at line ')[0]}") from None
    sites = list(_toml_sites(doc))
    if not sites:
        return text
    if doc.as_string() != text:
        raise _BadFile("1:1: tomlkit would not write this file back byte for byte, so it is not edited")
    lines = text.splitlines()
    _locate(sites, text)
    stack = state.stack([s.requirement for s in sites], index_urls=_dependencies().is_neuron_index(text))
    decided = []
    for site in sites:
        line = lines[site.line] if site.line < len(lines) else ""
        span = Span(site.line + 1, len(line) - len(line.lstrip()) + 1, site.line + 1, len(line) + 1)
        change = state.decide(site.requirement, stack, range(site.line + 1, site.line + 2), span)
        if change is not None:
            decided.append((site, change, span))
    if not decided:
        return text
    planned = []
    for site, change, span in decided:
        after = _after_texts(site, change)
        planned.append((site, change, after, state.apply(change, site.requirement, span, after)))
    pending: dict[str, _Pending] = {}
    # Back to front, so that an edit never moves the array positions of the items still to edit.
    for number, (site, change, after, markers) in reversed(list(enumerate(planned))):
        sentinel = _SENTINEL.format(number)
        todo = (_edit_poetry if site.poetry else _edit_array)(site, change, after, sentinel)
        if todo is not None:
            todo.markers = markers
            pending[sentinel] = todo
    out = _place_markers(tomlkit.dumps(doc), pending, state.no_comments)
    out = _mark_index_lines(text, out, state)
    try:
        tomlkit.parse(out)
    except ParseError as exc:
        raise AssertionError(f"the rewritten TOML does not parse: {exc}") from None
    return out


def _mark_index_lines(original: str, text: str, state: _FileEdit) -> str:
    """The Neuron index marker above every line of a changed pyproject.toml that points at the Neuron repository
    (a Poetry source, a uv index, a pip ``extra-index-url`` setting): those lines are untouched by
    the edits, so each is found again in ``text`` by its content, in order."""
    lines = text.splitlines(keepends=True)
    cursor = 0
    for number, line in enumerate(original.splitlines(), start=1):
        body = line.strip()
        if not _dependencies().is_neuron_index(line) or body.startswith("#"):
            continue
        index = next((i for i in range(cursor, len(lines)) if lines[i].rstrip("\r\n") == line), None)
        if index is None:
            continue
        cursor = index + 1
        span = Span(number, len(line) - len(line.lstrip()) + 1, number, len(line) + 1)
        markers = state.mark("neuron-index", range(number, number + 1), span, body)
        if markers is None:
            continue
        indent = line[: len(line) - len(line.lstrip())]
        nl = _split_newline(lines[index])[1] or _newline(text)
        above = _comments_above(lines, index)
        head = [m + nl for m in _marker_lines(markers, indent, above, state.no_comments)]
        lines[index:index] = head
        cursor += len(head)
    return "".join(lines)


def _toml_sites(doc):
    project = doc.get("project", {})
    arrays = [project.get("dependencies")]
    arrays += list(project.get("optional-dependencies", {}).values())
    arrays += list(doc.get("dependency-groups", {}).values())
    for array in arrays:
        if not isinstance(array, list):
            continue
        for index, item in enumerate(array):
            requirement = _dependencies().parse_requirement(str(item)) if isinstance(item, str) else None
            if requirement is not None and requirement.end:
                yield _Site(array, index, requirement, item)
    poetry = doc.get("tool", {}).get("poetry", {})
    tables = [poetry.get("dependencies"), poetry.get("dev-dependencies")]
    tables += [group.get("dependencies") for group in poetry.get("group", {}).values() if hasattr(group, "get")]
    for table in tables:
        if not hasattr(table, "items"):
            continue
        for key, value in list(table.items()):
            constraint = value if isinstance(value, str) else value.get("version") if hasattr(value, "get") else None
            if key.lower() == "python" or not isinstance(constraint, str):
                continue
            extras = tuple(value.get("extras", ())) if hasattr(value, "get") else ()
            requirement = _dependencies().poetry_requirement(key, str(constraint), extras)
            yield _Site(table, key, requirement, value, poetry=True)


def _locate(sites: list[_Site], text: str) -> None:
    """The original line of every site, for suppression comments and the report: a copy of the
    document with each dependency swapped for a numbered placeholder is written out, and since an
    item and its placeholder sit on the same line, the placeholder's line is the item's."""
    import tomlkit

    doc = tomlkit.parse(text)
    for number, site in enumerate(_toml_sites(doc)):
        holder, slot = site.container, site.slot
        if site.poetry and hasattr(site.value, "get"):
            holder, slot = site.value, "version"
        holder[slot] = _SENTINEL.format(number)
    lines = tomlkit.dumps(doc).splitlines()
    for number, site in enumerate(sites):
        site.line = _sentinel_line(lines, _SENTINEL.format(number))[0]


def _string_like(original, text: str):
    from tomlkit.items import String, StringType

    kind = getattr(original, "type", StringType.SLB)
    if kind in (StringType.SLL, StringType.MLL) and "'" in text:
        kind = StringType.SLB
    if kind in (StringType.MLB, StringType.MLL):
        kind = StringType.SLB if kind == StringType.MLB else StringType.SLL
    return String.from_raw(text, kind)


def _after_texts(site: _Site, change: Change) -> tuple[str, ...]:
    """The new dependencies as the report shows them."""
    if site.poetry:
        parsed = map(_dependencies().parse_requirement, change.replacement)
        return tuple(f'{r.name} = "{_poetry_constraint(r)}"' for r in parsed)
    value, requirement = str(site.value), site.requirement
    suffix = value[requirement.end : requirement.marker_end]
    return tuple(value[: requirement.start] + r + suffix for r in change.replacement)


def _poetry_constraint(requirement: Requirement) -> str:
    return requirement.written[len(requirement.name) + len(requirement.extras_text) :].strip() or "*"


def _edit_array(site: _Site, change: Change, after: tuple[str, ...], sentinel: str) -> _Pending | None:
    array, index = site.container, site.slot
    if not after and not change.marker:
        del array[index]
        return None
    for extra in reversed(after[1:]):
        array.insert(index + 1, _string_like(site.value, extra))
    array[index] = sentinel
    return _Pending(_string_like(site.value, after[0]).as_string() if after else None)


def _edit_poetry(site: _Site, change: Change, after: tuple[str, ...], sentinel: str) -> _Pending | None:
    import tomlkit

    table, key, value = site.container, str(site.slot), site.value
    new = [_dependencies().parse_requirement(r) for r in change.replacement]
    constraints = [(r.name, _poetry_constraint(r)) for r in new]
    inline = hasattr(value, "get")
    if len(new) == 1 and new[0].key == site.requirement.key:
        holder, slot = (value, "version") if inline else (table, key)
        old = holder[slot]
        holder[slot] = sentinel
        return _Pending(_string_like(old, constraints[0][1]).as_string())
    if not constraints:
        if not change.marker:
            del table[key]
            return None
        table[key] = sentinel
        return _Pending(None, whole_line=True)
    # The environment conditions of the replaced dependency hold for its replacements too.
    kept = {k: value[k] for k in ("markers", "python") if k in value} if inline else {}
    previous = key
    for number, (name, constraint) in enumerate(constraints):
        version = sentinel if number == 0 else constraint
        item = version
        if kept:
            item = tomlkit.inline_table()
            item.update({"version": version, **kept})
        _insert_after(table, previous, name, item)
        previous = name
    del table[key]
    return _Pending(_string_like(None, constraints[0][1]).as_string())


def _insert_after(table, previous: str, key: str, item) -> None:
    # tomlkit has no public "insert after"; its containers gained and lost private helpers across
    # releases (0.15 dropped `_insert_after`), so use whichever one this tomlkit has.
    container = getattr(table, "value", table)
    if hasattr(container, "_insert_after"):
        container._insert_after(previous, key, item)
        return
    position = next((i for i, (k, _) in enumerate(container.body) if k is not None and k.key == previous), None)
    if position is None or not hasattr(container, "_insert_at") or position + 1 >= len(container.body):
        table[key] = item
        return
    container._insert_at(position + 1, key, item)


def _place_markers(text: str, pending: dict[str, _Pending], no_comments: bool) -> str:
    lines = text.splitlines(keepends=True)
    # In document order, so that two markers above one line read top to bottom like the items.
    for sentinel, todo in sorted(pending.items(), key=lambda item: int(re.sub(r"\D", "", item[0]))):
        index, quoted = _sentinel_line(lines, sentinel)
        raw, nl = _split_newline(lines[index])
        indent = raw[: len(raw) - len(raw.lstrip())]
        head = [m + nl for m in _marker_lines(todo.markers, indent, _comments_above(lines, index), no_comments)]
        if todo.final is not None:
            body = [raw.replace(quoted, todo.final) + nl]
        elif todo.whole_line or re.fullmatch(r"\s*" + re.escape(quoted) + r"\s*,?\s*(#.*)?", raw):
            body = []
        else:
            for pattern in (re.escape(quoted) + r"\s*,\s*", r"\s*,\s*" + re.escape(quoted), re.escape(quoted)):
                if re.search(pattern, raw):
                    raw = re.sub(pattern, "", raw, count=1)
                    break
            body = [raw + nl]
        lines[index : index + 1] = head + body
    return "".join(lines)


def _sentinel_line(lines: list[str], sentinel: str) -> tuple[int, str]:
    # tomlkit writes a string assigned over an existing one in that string's quote style (0.15 on).
    for index, line in enumerate(lines):
        for quoted in (f'"{sentinel}"', f"'{sentinel}'"):
            if quoted in line:
                return index, quoted
    raise ValueError(f"tomlkit dropped the placeholder {sentinel}")


rewrite_requirements = _adapter(_requirements, cookie=True)
# A requirements file's text, migrated where it is not a file of its own (a notebook's %%writefile cell).
migrate_requirements_text = _text_migration(_requirements)
rewrite_setup_cfg = _adapter(_setup_cfg)
rewrite_conda_env = _adapter(_conda_env)
rewrite_pyproject = _adapter(_pyproject)
