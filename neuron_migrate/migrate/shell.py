"""Shell scripts and shell lines: find the commands with a real parser, edit the text by span.

A launch script is never re-rendered. ``bashlex`` finds the simple commands, their assignments and
words with their character positions, and the rules change only those spans, so comments,
heredocs, line continuations, quoting, arrays and functions survive byte for byte. A heredoc body
is data to this script; when it holds a script of its own, the rules read it through
:func:`heredoc_view` and :meth:`ShellEdits.adopt` takes their edits.

bashlex refuses a fair part of valid bash (``[[ ]]``, arrays, ``case``, ``$(( ))``...). The script
is therefore cut into line groups first (a line, plus whatever a quote, a bracket, a ``\\``
continuation or a heredoc carries over), each group is parsed on its own, a group bashlex refuses
is read again line by line with the syntax of blocks masked (``if ...; then``, ``for ... do``,
``case`` arms, function headers), and a line it still refuses is left as it is: one odd construct
never costs the rest of the file. Before parsing, a
same-length copy of the text masks what bashlex would trip on or misread (comments, heredoc bodies,
``[[ ]]`` tests, arithmetic, the brackets of array assignments), so every position found in the
copy is a position in the real text.

The rules live in :mod:`neuron_migrate.rules.launch_scripts`; this module knows bash, not Neuron.
"""

from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from neuron_migrate import markers
from neuron_migrate.migrate.sources import Outcome, decode_text, text_adapter
from neuron_migrate.report.model import MANUAL, REVIEW, SAFE, Finding, Span
from neuron_migrate.ruleapi import hooks_for
from neuron_migrate.ruleapi.reporter import Reporter

if TYPE_CHECKING:
    from collections.abc import Callable

    from neuron_migrate.migrate.engine import RulePlan
    from neuron_migrate.ruleapi import RuleMeta

__all__ = ["ShellResult", "ShellScript", "migrate_shell_text", "rewrite_shell"]

# ----- cutting the text into line groups ----------------------------------------------------------------

# Words that open and close a block when they stand where a command starts.
_OPENERS = frozenset({"if", "case", "for", "while", "until", "select", "{"})
_CLOSERS = frozenset({"fi", "esac", "done", "}"})
# After these reserved words the next word is again in command position.
_KEEP_COMMAND_POSITION = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"})
_PLAIN = re.compile(r"[^\s;&|()<>'\"`$\\]+")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_ARRAY_START = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]\s]*\])?\+?=\(")
_TEST_END = re.compile(r"[ \t]\]\](?=[\s;&|)]|$)")
_DELIMITER_STOP = frozenset(" \t\r\n;&|<>()")


@dataclass(frozen=True)
class ArraySpan:
    name: str
    start: int  # where the name starts
    open: int  # the "(" (masked in the view)
    close: int  # the ")" (masked in the view); the end of the text when it is never closed


@dataclass
class Layout:
    """What the scanner learnt about a text: a parser-friendly copy of the same length and the
    pieces it is cut into."""

    view: str
    groups: list[tuple[int, int]] = field(default_factory=list)
    depths: list[int] = field(default_factory=list)  # block depth where each group starts
    heredocs: list[tuple[int, int]] = field(default_factory=list)  # bodies: data to this script
    # For each body: where its `<<` operator is, and whether its delimiter is quoted (then the body
    # is written as it is; unquoted, `$`, backquotes and `\` still expand when it is written).
    heredoc_heads: list[tuple[int, bool]] = field(default_factory=list)
    arrays: list[ArraySpan] = field(default_factory=list)
    # Line starts where a comment line may go: not inside a quote, a heredoc or a continued line.
    line_starts: list[int] = field(default_factory=list)


class _Scanner:
    """One pass over the text: quotes, brackets, comments, heredocs and block keywords, enough to
    know where a command may end and what to hide from bashlex."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)
        self.view = list(text)
        self.layout = Layout(view="", line_starts=[0])
        self.stack: list[str] = []  # '"', "`", "${", "$(", "(", "A" (array)
        # heredocs waiting for their bodies: (delimiter, strip tabs, operator position, quoted)
        self.pending: list[tuple[str, bool, int, bool]] = []
        self.open_arrays: list[int] = []  # indexes into layout.arrays, innermost last
        self.depth = 0
        self.group_start = 0
        self.word_start = True
        self.command_start = True

    def run(self) -> Layout:
        self.layout.depths.append(0)
        i = 0
        while i < self.n:
            top = self.stack[-1] if self.stack else ""
            if top == '"':
                i = self._in_double_quotes(i)
            elif top == "`":
                i = self._in_backticks(i)
            elif top == "${":
                i = self._in_parameter(i)
            else:
                i = self._in_code(i)
        if self.group_start < self.n:
            self.layout.groups.append((self.group_start, self.n))
        else:
            self.layout.depths.pop()
        self.layout.view = "".join(self.view)
        return self.layout

    # -- contexts ------------------------------------------------------------------------------------
    def _in_code(self, i: int) -> int:
        text, c = self.text, self.text[i]
        if c == "\\":
            self.word_start = self.command_start = False
            return i + (3 if text.startswith("\r\n", i + 1) else 2)
        if c == "\n":
            return self._newline(i)
        if c in " \t\r":
            self.word_start = True
            return i + 1
        if c == "#" and self.word_start:
            end = self._line_end(i)
            self._mask(i, end)
            return end
        if c in ";&|":
            if c == "&" and text.startswith(">", i + 1):
                return self._redirect(i + 1)
            self.word_start = self.command_start = True
            return i + 1
        if c in "<>":
            if text.startswith("<<", i) and not text.startswith("<<<", i):
                return self._heredoc_operator(i)
            if text.startswith("(", i + 1):
                self.stack.append("$(")
                self.word_start = self.command_start = True
                return i + 2
            return self._redirect(i)
        if c == "'":
            self.word_start = self.command_start = False
            return self._after_single_quote(i)
        if c in '"`':
            self.stack.append(c)
            self.word_start = self.command_start = False
            return i + 1
        if c == "$":
            return self._dollar(i)
        if c == "(":
            if self.command_start and text.startswith("((", i):
                return self._arithmetic_command(i)
            self.stack.append("(")
            self.word_start = self.command_start = True
            return i + 1
        if c == ")":
            return self._close_paren(i)
        if self.word_start:
            return self._word(i)
        return self._plain(i)

    def _in_double_quotes(self, i: int) -> int:
        c = self.text[i]
        if c == "\\":
            return i + 2
        if c == '"':
            self.stack.pop()
            return i + 1
        if c == "`":
            self.stack.append("`")
            return i + 1
        if c == "$":
            return self._dollar(i)
        return i + 1

    def _in_backticks(self, i: int) -> int:
        c = self.text[i]
        if c == "\\":
            return i + 2
        if c == "`":
            self.stack.pop()
        return i + 1

    def _in_parameter(self, i: int) -> int:
        c = self.text[i]
        if c == "\\":
            return i + 2
        if c == "}":
            self.stack.pop()
            return i + 1
        if c == '"':
            self.stack.append('"')
            return i + 1
        if c == "$":
            return self._dollar(i)
        return i + 1

    # -- pieces --------------------------------------------------------------------------------------
    def _dollar(self, i: int) -> int:
        text = self.text
        self.word_start = self.command_start = False
        if text.startswith("$((", i):
            end = self._arithmetic_end(i + 3)
            if end is not None:
                # bashlex does not implement arithmetic: a same-length parameter stands in for it.
                for k in range(i + 1, end):
                    self.view[k] = "_"
                return end
            self.stack.append("$(")
            return i + 2
        if text.startswith("$(", i):
            self.stack.append("$(")
            return i + 2
        if text.startswith("${", i):
            self.stack.append("${")
            return i + 2
        if text.startswith("$'", i) and (not self.stack or self.stack[-1] != '"'):
            j = i + 2
            while j < self.n and text[j] != "'":
                j += 2 if text[j] == "\\" else 1
            return min(j + 1, self.n)
        return i + 1

    def _arithmetic_end(self, j: int) -> int | None:
        """End of ``$((...))`` / ``((...))`` whose body starts at ``j``, when it closes on this line."""
        depth = 2
        while j < self.n and depth:
            c = self.text[j]
            if c == "\n":
                return None
            depth += {"(": 1, ")": -1}.get(c, 0)
            j += 1
        return j if depth == 0 else None

    def _arithmetic_command(self, i: int) -> int:
        end = self._arithmetic_end(i + 2)
        if end is None:
            self.stack.append("(")
            return i + 1
        self._mask(i, end, ":")
        self.word_start = self.command_start = False
        return end

    def _close_paren(self, i: int) -> int:
        top = self.stack[-1] if self.stack else ""
        # A ")" with nothing open closes a case pattern.
        if top in ("(", "$(", "A"):
            self.stack.pop()
            if top == "A":
                self.view[i] = " "
                index = self.open_arrays.pop()
                array = self.layout.arrays[index]
                self.layout.arrays[index] = ArraySpan(array.name, array.start, array.open, i)
            # After a subshell or an array comes an operator; after $(...) the word goes on.
            self.word_start = self.command_start = top != "$("
        return i + 1

    def _redirect(self, i: int) -> int:
        j = i + 1
        while j < self.n and self.text[j] in "<>&|-":
            j += 1
        self.word_start = True
        return j

    def _after_single_quote(self, i: int) -> int:
        end = self.text.find("'", i + 1)
        return self.n if end < 0 else end + 1

    def _word(self, i: int) -> int:
        text = self.text
        array = _ARRAY_START.match(text, i)
        if array:
            paren = array.end() - 1
            self.view[paren] = " "
            self.stack.append("A")
            self.open_arrays.append(len(self.layout.arrays))
            self.layout.arrays.append(ArraySpan(array.group(1), i, paren, self.n))
            self.word_start, self.command_start = True, False
            return paren + 1
        if self.command_start and text.startswith("[[", i):
            end = self._test_end(i)
            if end is not None:
                # bashlex refuses [[ ]]; the test itself holds nothing to migrate.
                self._mask(i, end, ":")
                self.word_start = self.command_start = False
                return end
        match = _PLAIN.match(text, i)
        if match is None:  # a space bash does not split on (form feed, no-break space...)
            self.word_start = self.command_start = False
            return i + 1
        word = match.group(0)
        end = match.end()
        complete = end >= self.n or text[end] in " \t\r\n;&|()<>"
        if complete and word in _OPENERS and (self.command_start or word == "{"):
            self.depth += 1
        elif complete and word in _CLOSERS and (self.command_start or word == "}"):
            self.depth = max(0, self.depth - 1)
        if self.command_start:
            self.command_start = (complete and word in _KEEP_COMMAND_POSITION) or bool(_ASSIGNMENT.match(word))
        self.word_start = False
        return end

    def _plain(self, i: int) -> int:
        match = _PLAIN.match(self.text, i)
        return match.end() if match else i + 1

    def _test_end(self, i: int) -> int | None:
        match = _TEST_END.search(self.text, i + 2, self._line_end(i))
        return match.end() if match else None

    def _heredoc_operator(self, i: int) -> int:
        text = self.text
        j = i + 2
        strip_tabs = text.startswith("-", j)
        j += strip_tabs
        while j < self.n and text[j] in " \t":
            j += 1
        delimiter = []
        word_start = j
        while j < self.n and text[j] not in _DELIMITER_STOP:
            c = text[j]
            if c in "'\"":
                end = text.find(c, j + 1)
                end = self.n if end < 0 else end
                delimiter.append(text[j + 1 : end])
                j = end + 1
            elif c == "\\":
                delimiter.append(text[j + 1 : j + 2])
                j += 2
            else:
                delimiter.append(c)
                j += 1
        if delimiter:
            quoted = any(c in "'\"\\" for c in text[word_start:j])
            self.pending.append(("".join(delimiter), strip_tabs, i, quoted))
            self._unquote_delimiter(word_start, j)
        self.word_start = True
        return j

    def _unquote_delimiter(self, start: int, end: int) -> None:
        """bashlex does not know quoted heredoc delimiters (``<<'EOF'``): it sees ``<< EOF `` instead.
        The body is masked anyway, so whether it would expand makes no difference here."""
        word = self.text[start:end]
        if len(word) > 2 and word[0] in "'\"" and word[-1] == word[0] and word[0] not in word[1:-1]:
            self.view[start] = self.view[end - 1] = " "
        elif word.startswith("\\") and "\\" not in word[1:]:
            self.view[start] = " "

    def _newline(self, i: int) -> int:
        i += 1
        if self.pending:
            i = self._heredoc_bodies(i)
        top = self.stack[-1] if self.stack else ""
        if top in ("", "(", "$(", "A"):
            self.layout.line_starts.append(i)
        if not self.stack and i > self.group_start:
            self.layout.groups.append((self.group_start, i))
            self.layout.depths.append(self.depth)
            self.group_start = i
        self.word_start = self.command_start = True
        return i

    def _heredoc_bodies(self, i: int) -> int:
        text = self.text
        for delimiter, strip_tabs, operator, quoted in self.pending:
            self.layout.heredoc_heads.append((operator, quoted))
            body_start = i
            while i < self.n:
                end = self._line_end(i)
                line = text[i:end].rstrip("\r")
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    self.layout.heredocs.append((body_start, i))
                    self._mask(body_start, i)
                    i = min(end + 1, self.n)
                    break
                i = min(end + 1, self.n)
            else:
                self.layout.heredocs.append((body_start, self.n))
                self._mask(body_start, self.n)
        self.pending = []
        return i

    # -- helpers -------------------------------------------------------------------------------------
    def _line_end(self, i: int) -> int:
        end = self.text.find("\n", i)
        if end < 0:
            return self.n
        return end - 1 if end > i and self.text[end - 1] == "\r" else end

    def _mask(self, start: int, end: int, first: str = " ") -> None:
        for k in range(start, end):
            if self.view[k] not in "\r\n":
                self.view[k] = " "
        if first != " " and start < end:
            self.view[start] = first


def scan(text: str) -> Layout:
    """Cut ``text`` into line groups and build its parser-friendly copy (see :class:`Layout`)."""
    return _Scanner(text).run()


# ----- the commands of a script -------------------------------------------------------------------------

ASSIGNMENT = "assignment"
WORD = "word"
REDIRECT = "redirect"
# Builtins whose arguments set (or unset) variables.
DECLARATIONS = frozenset({"export", "declare", "typeset", "local", "readonly"})
_JOINING = frozenset({"&&", "||", "|", "|&"})
_LEADING_KEYWORDS = re.compile(r"\s*(?:(?:then|do|else|time|!|\{)[ \t]+)+")
_TRAILING_KEYWORDS = re.compile(r"(?:[;&][ \t]*|[ \t])(?:fi|done|esac|\})[ \t]*(?:;[ \t]*)?(?=\r?\n?$)")


@dataclass(frozen=True)
class Word:
    """A word, an assignment or a redirection as written: ``raw`` is the text, ``value`` bashlex's
    reading of it (quotes removed, expansions left as written)."""

    start: int
    end: int
    raw: str
    value: str
    kind: str = WORD


@dataclass
class Command:
    """One simple command: its items in order (leading assignments, words, redirections)."""

    index: int
    start: int
    end: int
    items: list[Word]
    # The list operators next to it: (operator, its start, where the other command starts/ends).
    before: tuple[str, int, int] | None = None
    after: tuple[str, int, int] | None = None
    in_pipeline: bool = False

    @property
    def assignments(self) -> list[Word]:
        out = []
        for item in self.items:
            if item.kind == ASSIGNMENT:
                out.append(item)
            elif item.kind == WORD:
                break
        return out

    @property
    def words(self) -> list[Word]:
        return [i for i in self.items if i.kind == WORD]

    @property
    def joined(self) -> bool:
        """Tied to a neighbour with ``&&``, ``||`` or a pipe: it cannot simply disappear."""
        ops = {op[0] for op in (self.before, self.after) if op is not None}
        return self.in_pipeline or bool(ops & _JOINING)


@dataclass
class Array:
    """``NAME=( ... )``: its elements are words like a command's."""

    index: int
    name: str
    start: int
    open: int
    close: int
    elements: list[Word] = field(default_factory=list)


@dataclass(frozen=True)
class Setting:
    """A place where the script sets, exports or unsets a variable."""

    name: str
    name_start: int
    value: str | None  # None: ``export NAME`` / ``unset NAME``
    item: Word
    command: Command
    unset: bool = False


@dataclass(frozen=True)
class Reference:
    """``$NAME`` / ``${NAME...}``: where the name itself is written."""

    name: str
    start: int
    end: int


class ShellScript:
    """A shell text, cut into line groups and parsed group by group (see the module docstring)."""

    def __init__(self, text: str, path: str, python: str = "") -> None:
        self.text = text
        self.path = path
        # The Python that runs next to these commands (a notebook's code cells): what rules may read
        # to know what the commands' outputs are for.
        self.python = python
        self.layout = scan(text)
        self.commands: list[Command] = []
        self.arrays: list[Array] = []
        self.references: list[Reference] = []
        self.refused: list[tuple[int, int]] = []  # groups bashlex would not parse: left as they are
        # What one rule worked out about the script that the next can reuse (the launches).
        self.shared: dict[str, object] = {}
        # Files the script's own container writes (a notebook's %%writefile cells): path -> text.
        self.files: dict[str, str] = {}
        self._newlines = [i for i, c in enumerate(text) if c == "\n"]
        for start, end in self.layout.groups:
            self._read_group(start, end)
        self.commands.sort(key=lambda c: c.start)
        for index, command in enumerate(self.commands):
            command.index = index
        self._definitions = self._collect_definitions()

    # -- parsing -------------------------------------------------------------------------------------
    def _read_group(self, start: int, end: int) -> None:
        if not self.layout.view[start:end].strip():
            return
        if self._read_chunk(start, end, self.layout.view[start:end]):
            return
        # A group bashlex refuses is mostly the header of a block (`if ...; then`, `for ... do`) or a
        # `case` arm: it is read line by line with the block syntax masked, and only lines that
        # still do not parse are refused.
        for line_start, line_end in _logical_lines(self.layout.view, start, end):
            chunk = _mask_block_syntax(self.layout.view[line_start:line_end])
            if chunk.strip() and not self._read_chunk(line_start, line_end, chunk):
                self.refused.append((line_start, line_end))

    def _read_chunk(self, start: int, end: int, chunk: str) -> bool:
        """Parse ``chunk`` (the view of ``start:end``, maybe masked further); False when bashlex refuses it."""
        nodes = _parse(chunk)
        if nodes is None:
            return False
        crs = [m.start() - k for k, m in enumerate(re.finditer(r"\r(?=\n)", chunk))]
        reader = _NodeReader(self.text, start, crs)
        for node in nodes:
            reader.visit(node)
        arrays = [a for a in self.layout.arrays if start <= a.start < end]
        commands = reader.commands
        for span in arrays:
            array = Array(len(self.arrays), span.name, span.start, span.open, span.close)
            array.elements = sorted({w for c in commands for w in c.items if _inside(w, span)}, key=lambda w: w.start)
            for command in commands:
                command.items = [w for w in command.items if not _inside(w, span)]
                if command.items:
                    command.start, command.end = command.items[0].start, command.items[-1].end
            self.arrays.append(array)
        self.commands.extend(c for c in commands if c.items)
        self.references.extend(reader.references)
        return True

    def _collect_definitions(self) -> list[tuple[int, str, object]]:
        """(position, name, Array or literal value) for every variable definition, in order."""
        out: list[tuple[int, str, object]] = [(a.start, a.name, a) for a in self.arrays]
        for command in self.commands:
            words = command.words
            declaring = not words or (words[0].value in DECLARATIONS and command.assignments == [])
            candidates = command.assignments if not words else words[1:] if declaring else []
            for item in candidates:
                match = _ASSIGNMENT.match(item.value)
                if match and not self.is_array_assignment(item):
                    out.append((item.start, match.group(0).rstrip("+=").split("[")[0], item.value[match.end() :]))
        out.sort(key=lambda d: d[0])
        return out

    # -- questions the rules ask ---------------------------------------------------------------------
    def is_array_assignment(self, item: Word) -> bool:
        return any(a.start == item.start for a in self.arrays)

    def variable_before(self, name: str, position: int) -> object | None:
        """The last definition of ``name`` before ``position``: an :class:`Array`, a literal string or None."""
        found = None
        for pos, defined, value in self._definitions:
            if pos >= position:
                break
            if defined == name:
                found = value
        return found

    def settings(self, wrappers: frozenset[str] = frozenset()) -> list[Setting]:
        """Every assignment, ``export``/``declare``/``local`` argument, ``env NAME=value`` prefix and
        ``unset`` name, in text order. ``wrappers`` name more commands that run the rest of their line as a
        command of its own, whose leading ``NAME=value`` words then set its environment as env's do."""
        out = []
        for command in self.commands:
            for item in command.assignments:
                out.append(self._setting(item, command))
            words = command.words
            if not words:
                continue
            head = words[0].value
            rest = words[1:]
            if head in DECLARATIONS or head == "unset":
                for item in rest:
                    if item.value.startswith("-"):
                        continue
                    if _ASSIGNMENT.match(item.value) or re.fullmatch(r"[A-Za-z_]\w*", item.value):
                        out.append(self._setting(item, command, unset=head == "unset"))
            elif head == "env" or os.path.basename(head) in wrappers:
                for item in rest:
                    if not _ASSIGNMENT.match(item.value):
                        if item.value.startswith("-"):
                            continue
                        break
                    out.append(self._setting(item, command))
        return [s for s in out if s is not None and not self.is_array_assignment(s.item)]

    def _setting(self, item: Word, command: Command, unset: bool = False) -> Setting | None:
        match = _ASSIGNMENT.match(item.value)
        if match is None:
            name_match = re.fullmatch(r"[A-Za-z_]\w*", item.value)
            if name_match is None or not item.raw.startswith(item.value):
                return None
            return Setting(item.value, item.start, None, item, command, unset)
        name = match.group(0).rstrip("=").rstrip("+")
        if "[" in name or not item.raw.startswith(name):
            return None
        return Setting(name, item.start, item.value[match.end() :], item, command)

    def array_is_indexed(self, name: str) -> bool:
        """Whether the script reads ``name`` by position (``${A[0]}``, ``${A[@]:1}``, ``${#A[@]}``):
        then removing one of its elements would shift what those read."""
        pattern = rf"\$\{{(?:#{re.escape(name)}\[|!{re.escape(name)}\[|{re.escape(name)}\[(?![@*]\]\}}))"
        return re.search(pattern, self.layout.view) is not None

    # -- positions -----------------------------------------------------------------------------------
    def line_of(self, position: int) -> int:
        return bisect.bisect_right(self._newlines, position - 1) + 1

    def line_start(self, position: int) -> int:
        return self.text.rfind("\n", 0, position) + 1

    def line_end(self, position: int) -> int:
        """Index of the newline ending ``position``'s line (its "\\r" for CRLF), or the text's end."""
        end = self.text.find("\n", position)
        if end < 0:
            return len(self.text)
        return end - 1 if end > 0 and self.text[end - 1] == "\r" else end

    def span(self, start: int, end: int) -> Span:
        line = self.line_of(start)
        end_line = self.line_of(max(start, end - 1))
        return Span(
            line,
            start - self.line_start(start) + 1,
            end_line,
            end - self.line_start(end - 1) + 1 if end > start else start - self.line_start(start) + 1,
        )

    def marker_line_start(self, position: int) -> int:
        """The line start where a comment about the command at ``position`` can go: above the
        first line of a continued command, never inside a quote or a heredoc."""
        starts = self.layout.line_starts
        return starts[bisect.bisect_right(starts, position) - 1]

    def group_depth(self, position: int) -> tuple[int, int]:
        """(start, block depth) of the line group holding ``position``."""
        starts = [g[0] for g in self.layout.groups]
        index = max(0, bisect.bisect_right(starts, position) - 1)
        return self.layout.groups[index][0], self.layout.depths[index]

    def top_level_start(self, position: int) -> int:
        """Start of the outermost block (or line group) holding ``position``: a line there runs
        whichever branch the script then takes."""
        starts = [g[0] for g in self.layout.groups]
        index = max(0, bisect.bisect_right(starts, position) - 1)
        while index > 0 and self.layout.depths[index] > 0:
            index -= 1
        return self.layout.groups[index][0] if self.layout.groups else 0


def _inside(word: Word, array: ArraySpan) -> bool:
    return array.open < word.start and word.end <= array.close


_CASE_HEADER = re.compile(r"[ \t]*case[ \t].*[ \t]in[ \t]*(?:#.*)?\r?$")
_CASE_END = re.compile(r"[ \t]*esac[ \t]*;?[ \t]*\r?$")
_CASE_LABEL = re.compile(r"[ \t]*\(?[^\s()]+(?:[ \t]*\|[ \t]*[^\s()|]+)*\)")
_ARM_END = re.compile(r"[ \t]*(?:;;&?|;&)[ \t]*(?:esac[ \t]*)?\r?$")


def _logical_lines(view: str, start: int, end: int) -> list[tuple[int, int]]:
    """``start:end`` cut at newlines that no ``\\`` continues (each piece without its newline)."""
    out, line_start = [], start
    for match in re.finditer(r"\n", view[start:end]):
        newline = start + match.start()
        if view[newline - 1 : newline] == "\\" or view[newline - 2 : newline] == "\\\r":
            continue
        out.append((line_start, newline))
        line_start = newline + 1
    if line_start < end:
        out.append((line_start, end))
    return out


def _mask_case_syntax(line: str) -> str:
    """``line`` with what only a ``case`` block has (the header, ``esac``, an arm's ``label)`` and
    its ``;;``) replaced by spaces, so what is left is ordinary commands at the same positions."""
    if _CASE_HEADER.match(line) or _CASE_END.match(line):
        return " " * len(line)
    label = _CASE_LABEL.match(line)
    if label:
        line = " " * label.end() + line[label.end() :]
    arm_end = _ARM_END.search(line)
    if arm_end:
        line = line[: arm_end.start()] + " " * (arm_end.end() - arm_end.start()) + line[arm_end.end() :]
    return line


# Where a reserved word may stand: the start of the line or after a list operator.
_COMMAND_START = r"(?:^|(?<=[;&|]))[ \t]*"
_BLOCK_WORD = re.compile(_COMMAND_START + r"(if|elif|while|until|then|do|else|fi|done|esac|\{|\}|!)(?=[\s;&|]|$)")
# `for NAME in WORDS` / `select NAME in WORDS`: the words stay, read as the arguments of `:`.
_FOR_HEADER = re.compile(_COMMAND_START + r"((?:for|select)[ \t]+[A-Za-z_]\w*(?:[ \t]+in(?=[\s;]|$))?)")
_FUNCTION_HEADER = re.compile(
    r"[ \t]*(?:function[ \t]+[^\s(){}]+(?:[ \t]*\([ \t]*\))?|[A-Za-z_][\w:.-]*[ \t]*\([ \t]*\))[ \t]*\{?"
)


def _mask_block_syntax(line: str) -> str:
    """``line`` (one logical line of a block bashlex refused as a whole, such as the ``if ...; then``
    that opens it) with the syntax of ``if``/``while``/``for``/``case`` blocks and function headers
    replaced by spaces, so the commands of the condition, the loop words and the body are read at
    their own positions."""
    line = _mask_case_syntax(line)
    function = _FUNCTION_HEADER.match(line)
    if function and function.end():
        line = " " * function.end() + line[function.end() :]
    quoted = _quoted_positions(line)
    for match in _FOR_HEADER.finditer(line):
        if match.start(1) not in quoted:
            line = line[: match.start(1)] + ":" + " " * (match.end(1) - match.start(1) - 1) + line[match.end(1) :]
    for match in _BLOCK_WORD.finditer(line):
        if match.start(1) not in quoted:
            line = line[: match.start(1)] + " " * (match.end(1) - match.start(1)) + line[match.end(1) :]
    return line


def _quoted_positions(line: str) -> set[int]:
    """Positions of ``line`` inside quotes (enough to keep a reserved word in a string as it is)."""
    inside, quote, escaped = set(), "", False
    for k, c in enumerate(line):
        if escaped:
            escaped = False
        elif c == "\\" and quote != "'":
            escaped = True
        elif quote and c == quote:
            quote = ""
        elif not quote and c in "'\"":
            quote = c
        elif quote:
            inside.add(k)
    return inside


def _parse(chunk: str):
    """bashlex's nodes for one line group; None when it refuses it even without a leading
    ``then``/``do``/``else`` or a trailing ``fi``/``done`` (a line inside a block)."""
    import bashlex

    compact = chunk.replace("\r\n", "\n")
    attempts = [compact]
    leading = _LEADING_KEYWORDS.match(compact)
    if leading and leading.end():
        attempts.append(" " * leading.end() + compact[leading.end() :])
    for text in list(attempts):
        trailing = _TRAILING_KEYWORDS.search(text)
        if trailing:
            attempts.append(
                text[: trailing.start()] + " " * (trailing.end() - trailing.start()) + text[trailing.end() :]
            )
    for text in attempts:
        try:
            return bashlex.parse(text)
        except Exception:  # noqa: BLE001, S112 - bashlex raises many kinds of errors for bash it does not know
            continue
    return None


class _NodeReader:
    """Turns bashlex nodes of one group into :class:`Command` objects with positions in the text."""

    def __init__(self, text: str, offset: int, crs: list[int]) -> None:
        self.text = text
        self.offset = offset
        self.crs = crs  # positions (in the parsed string) of the "\r"s it did not see
        self.commands: list[Command] = []
        self.references: list[Reference] = []
        self.seen: set[int] = set()

    def position(self, p: int) -> int:
        return self.offset + p + bisect.bisect_right(self.crs, p)

    def end_position(self, p: int) -> int:
        return self.position(p - 1) + 1 if p > 0 else self.offset

    def word(self, node, kind: str) -> Word:
        start, end = self.position(node.pos[0]), self.end_position(node.pos[1])
        return Word(start, end, self.text[start:end], getattr(node, "word", ""), kind)

    def visit(self, node, context: tuple = ()) -> None:
        kind = node.kind
        # A compound node lists its children under two names: each node is read once.
        if kind == "heredoc" or id(node) in self.seen:
            return
        self.seen.add(id(node))
        if kind == "command":
            self._command(node, context)
        elif kind == "parameter":
            self._reference(node)
        if kind in ("list", "pipeline"):
            self._sequence(node)
            return
        for name, value in vars(node).items():
            if name in ("heredoc", "kind", "pos"):
                continue
            for child in value if isinstance(value, list) else [value]:
                if hasattr(child, "kind"):
                    self.visit(child)

    def _sequence(self, node) -> None:
        parts = node.parts
        for k, part in enumerate(parts):
            if part.kind != "command":
                self.visit(part)
                continue
            before = after = None
            if k > 0 and parts[k - 1].kind in ("operator", "pipe"):
                op = parts[k - 1]
                previous_end = self.end_position(parts[k - 2].pos[1]) if k > 1 else self.offset
                before = (getattr(op, "op", None) or op.pipe, self.position(op.pos[0]), previous_end)
            if k + 1 < len(parts) and parts[k + 1].kind in ("operator", "pipe"):
                op = parts[k + 1]
                next_start = self.position(parts[k + 2].pos[0]) if k + 2 < len(parts) else self.end_position(op.pos[1])
                after = (getattr(op, "op", None) or op.pipe, self.position(op.pos[0]), next_start)
            self.visit(part, (before, after, node.kind == "pipeline"))

    def _command(self, node, context: tuple) -> None:
        items = []
        for part in node.parts:
            if part.kind == "assignment":
                items.append(self.word(part, ASSIGNMENT))
            elif part.kind == "word":
                items.append(self.word(part, WORD))
            elif part.kind == "redirect":
                start, end = self.position(part.pos[0]), self.end_position(part.pos[1])
                if part.type in ("<<", "<<-"):
                    # The node's span reaches into the heredoc body; only the operator line counts.
                    end = self.end_position(part.output.pos[1])
                items.append(Word(start, end, self.text[start:end], "", REDIRECT))
        if not items:
            return
        before, after, in_pipeline = context if context else (None, None, False)
        command = Command(0, items[0].start, items[-1].end, items, before, after, in_pipeline)
        self.commands.append(command)

    def _reference(self, node) -> None:
        match = re.match(r"[A-Za-z_]\w*", node.value)
        if match is None:
            return
        start = self.position(node.pos[0])
        if self.text.startswith("${", start):
            start += 2
        elif self.text.startswith("$", start):
            start += 1
        else:
            return
        name = match.group(0)
        if self.text.startswith(name, start):
            self.references.append(Reference(name, start, start + len(name)))


# ----- edits, markers and findings ----------------------------------------------------------------------

ListKey = tuple[str, int]  # ("command", index) or ("array", index)
REMOVE = None


class ShellEdits:
    """What the rules ask for, applied at the end in one go: item removals and replacements,
    whole-command deletions, renames, inserted lines and marker comments.

    Rules never touch the text themselves: like :class:`~neuron_migrate.migrate.context.FileContext`
    for Python, this is where suppression comments, ``--no-comments``, marker de-duplication and
    the report are handled the same way for every rule.
    """

    def __init__(self, script: ShellScript, selected: set[str], no_comments: bool, cell: int | None) -> None:
        self.script = script
        self.selected = selected
        self.no_comments = no_comments
        self.cell = cell
        self.reporter = Reporter(script.path, script.text, cell=cell)
        self.findings = self.reporter.findings
        self.newline = "\r\n" if "\r\n" in script.text else "\n"
        self._item_ops: dict[ListKey, dict[int, str | None]] = {}
        self._deleted: dict[int, tuple[int, int, str]] = {}  # command index -> its edit
        self._edits: list[tuple[int, int, str, int]] = []  # (start, end, text, order)
        self._markers: dict[int, list[str]] = {}  # line start -> marker comments, in order
        # New lines and markers as they must be written: inside an unquoted heredoc, escaped.
        self.escape: Callable[[str], str] = str
        self._adopted: list[tuple[int, int]] = []  # heredoc bodies edited by a script of their own

    # -- what rules ask ------------------------------------------------------------------------------
    def items(self, key: ListKey) -> list[Word]:
        kind, index = key
        return self.script.commands[index].items if kind == "command" else self.script.arrays[index].elements

    def suppressed(self, rule_id: str, *spans: tuple[int, int]) -> bool:
        if not self.reporter.has_suppressions:
            return False
        lines = set()
        for start, end in spans:
            lines.update(range(self.script.line_of(start), self.script.line_of(max(start, end - 1)) + 1))
        return self.reporter.suppresses(rule_id, lines)

    def suppress(self, lines: range, ids: frozenset[str] | None) -> None:
        """Treat ``lines`` (1-based) as carrying an ignore comment for ``ids`` (None: every rule)."""
        self.reporter.suppress(lines, ids)

    def remove(self, key: ListKey, index: int) -> None:
        self._item_ops.setdefault(key, {}).setdefault(index, REMOVE)

    def replace(self, key: ListKey, index: int, text: str) -> None:
        self._item_ops.setdefault(key, {})[index] = text

    def replaced(self, key: ListKey, index: int) -> bool:
        return isinstance(self._item_ops.get(key, {}).get(index), str)

    def removed(self, key: ListKey, index: int) -> bool:
        ops = self._item_ops.get(key, {})
        return index in ops and ops[index] is REMOVE

    def is_emptied(self, command: Command, removing: set[int]) -> bool:
        """Whether removing the items ``removing`` (and those already removed) leaves ``command``
        without anything to do: no word, or only ``export``/``unset``/``env``... with no argument."""
        key = ("command", command.index)
        gone = set(removing) | {i for i, op in self._item_ops.get(key, {}).items() if op is REMOVE}
        left = [item for i, item in enumerate(command.items) if i not in gone and item.kind != REDIRECT]
        if not left:
            return True
        head = left[0].value
        return head in (*DECLARATIONS, "unset", "env") and all(w.value.startswith("-") for w in left[1:])

    def deletion(self, command: Command) -> tuple[int, int, str] | None:
        """The edit that deletes ``command``, or None when it cannot go without breaking the script
        (it is tied to another command with ``&&`` or a pipe)."""
        script, text = self.script, self.script.text
        if command.joined:
            return None
        line_start, line_end = script.line_start(command.start), script.line_end(command.end)
        alone = not text[line_start : command.start].strip() and (
            not text[command.end : line_end].strip() or text[command.end : line_end].lstrip().startswith("#")
        )
        if alone and _empties_block(script.layout.view, command.start, command.end):
            # `then`/`do`/`{` followed by nothing is a syntax error: keep a no-op in its place.
            return (command.start, command.end, ":")
        if alone and command.before is None and command.after is None:
            if line_end >= len(text):
                # The last line of a file without a final newline: the newline before it goes.
                back = len(self.newline) if text.endswith(self.newline, 0, line_start) else 0
                return (line_start - back, len(text), "")
            return (line_start, line_end + len(self.newline) if text.startswith("\r\n", line_end) else line_end + 1, "")
        if command.after is not None and command.after[0] in (";", "&", "\n"):
            return (command.start, command.after[2], "")
        if command.before is not None and command.before[0] in (";", "&", "\n"):
            return (command.before[2], command.end, "")
        return None

    def delete(self, command: Command) -> None:
        edit = self.deletion(command)
        if edit is None:
            raise ValueError("this command cannot be deleted; ask deletion() first")
        self._deleted[command.index] = edit

    def rewrite(self, start: int, end: int, text: str) -> None:
        """Replace the text ``start:end`` (a name, a value) with ``text``."""
        self._edits.append((start, end, text, 2))

    def insert_line(self, position: int, line: str) -> None:
        """A new line (without its newline) at the line start ``position``, above any marker there."""
        self._edits.append((position, position, self.escape(line) + self.newline, 0))

    def marker(self, meta: RuleMeta, safety: str, text: str, anchor: int) -> None:
        """``meta``'s marker (a TODO when ``safety`` is manual, else a review note) above the command or
        array at ``anchor``, for a marker that sums up several findings (one per flag of a line)."""
        self._mark(anchor, markers.comment(meta.id, safety, text))

    def _mark(self, position: int, comment: str) -> None:
        if self.no_comments:
            return
        comment = self.escape(comment)
        comments = self._markers.setdefault(self.script.marker_line_start(position), [])
        if comment not in comments:
            comments.append(comment)

    def report(
        self,
        meta: RuleMeta,
        start: int,
        end: int,
        message: str,
        safety: str,
        *,
        applied: bool,
        marker: str = "",
        anchor: int = 0,
        marker_safety: str = "",
        after: str = "",
        fix: str = "",
        before: str = "",
    ) -> None:
        """The one call for what a rule did or left at ``start:end``: the finding, and the marker
        ``marker`` asks for above the command or array at ``anchor`` (see Reporter.report)."""
        before = before or " ".join(self.script.text[start:end].split())
        text = self.reporter.report(
            meta, self.script.span(start, end), message, safety, applied=applied, before=before, after=after,
            fix=fix, marker=marker, marker_safety=marker_safety,
        )
        if text:
            self._mark(anchor, "# " + text)

    def review(
        self, meta: RuleMeta, start: int, end: int, message: str, review: str, anchor: int, after: str = ""
    ) -> None:
        """An applied edit a human should check: the finding, and a review marker above ``anchor``."""
        self.report(
            meta, start, end, message, REVIEW, applied=True, after=after, fix=review, marker=review, anchor=anchor
        )

    def safe(self, meta: RuleMeta, start: int, end: int, message: str, after: str = "") -> None:
        self.report(meta, start, end, message, SAFE, applied=True, after=after)

    def manual(self, meta: RuleMeta, start: int, end: int, message: str, anchor: int) -> None:
        """Nothing is changed: the finding, and a TODO marker with the next step above ``anchor``."""
        self.report(meta, start, end, message, MANUAL, applied=False, fix=message, marker=message, anchor=anchor)

    def skip(self, meta: RuleMeta, start: int, end: int) -> None:
        """The rule would act here, but a suppression comment says no."""
        self.reporter.skipped(meta, self.script.span(start, end), " ".join(self.script.text[start:end].split()))

    def adopt(self, body: tuple[int, int], inner: ShellEdits) -> None:
        """Take the edits and findings of ``inner``, the rules' pass over the heredoc ``body`` read as a
        script of its own (see :func:`heredoc_view`): its positions are this script's positions."""
        self._adopted.append(body)
        self._edits += inner.edits()
        self.findings += inner.findings

    # -- applying ------------------------------------------------------------------------------------
    def apply(self) -> str:
        return apply_edits(self.script.text, self.edits(), self.protected())

    def protected(self) -> list[tuple[int, int]]:
        """The heredoc bodies no edit may reach into: all but those edited as scripts of their own."""
        return [body for body in self.script.layout.heredocs if body not in self._adopted]

    def edits(self) -> list[tuple[int, int, str, int]]:
        """Every change as (start, end, new text, order), positions in the script's text: a caller
        that parsed a same-length stand-in (a Dockerfile's view) applies them to the real text."""
        text = self.script.text
        edits = list(self._edits)
        deleted = list(self._deleted.values())
        for key, ops in self._item_ops.items():
            if key[0] == "command" and key[1] in self._deleted:
                continue
            edits += [(*edit, 2) for edit in _item_edits(text, self.items(key), ops)]
        for position, comments in self._markers.items():
            new = [c for c in comments if c not in _comments_above(text, position)]
            if not new:
                continue
            indent = re.match(r"[ \t]*", text[position:]).group(0)
            block = "".join(indent + c + self.newline for c in new)
            # The deleted last line of a file without a final newline took the newline before it;
            # its marker takes its place instead, still without a final newline.
            ends_open = not text.endswith("\n")
            last = next((d for d in deleted if ends_open and d[0] <= position < d[1] == len(text)), None)
            if last is not None:
                deleted[deleted.index(last)] = (position, last[1], last[2])
                block = block[: -len(self.newline)]
            edits.append((position, position, block, 1))
        edits += [(*edit, 2) for edit in deleted]
        return edits


def heredoc_view(text: str, start: int, end: int) -> str:
    """``text`` with everything but the heredoc body ``start:end`` blanked (line breaks kept): the
    body reads as a script of its own whose positions are positions in ``text``."""
    blank = re.sub(r"[^\r\n]", " ", text[:start])
    return blank + text[start:end] + re.sub(r"[^\r\n]", " ", text[end:])


def escape_for_heredoc(line: str) -> str:
    """A new line for an unquoted heredoc, which expands ``$``, backquotes and ``\\`` when written."""
    return re.sub(r"([\\$`])", r"\\\1", line)


def _empties_block(view: str, start: int, end: int) -> bool:
    """Whether the command at ``start:end`` is all there is between a block's opening and its end."""
    before = re.search(r"(\S+)\s*$", view[:start])
    after = re.match(r"\s*(;;|[^\s;]+)", view[end:])
    if before is None or after is None:
        return False
    opening = before.group(1) in ("then", "do", "else", "{", "(") or before.group(1).endswith(")")
    return opening and after.group(1) in ("fi", "done", "else", "elif", "}", ")", "esac", ";;")


def _comments_above(text: str, position: int) -> set[str]:
    """The comment lines right above the line starting at ``position`` (stripped)."""
    found = set()
    end = position
    while end > 0:
        start = text.rfind("\n", 0, end - 1) + 1
        line = text[start:end].strip()
        if not line.startswith("#"):
            break
        found.add(line)
        end = start
    return found


def _item_edits(text: str, items: list[Word], ops: dict[int, str | None]) -> list[tuple[int, int, str]]:
    """Text edits for removing and replacing items of one command or array.

    A run of removed items goes with the space before it when something precedes it on its line;
    a run that fills its own line takes the line with it, so a removed flag leaves neither a blank
    line nor a dangling ``\\``.
    """
    edits = [(items[i].start, items[i].end, new) for i, new in ops.items() if new is not REMOVE]
    removed = sorted(i for i, new in ops.items() if new is REMOVE)
    runs: list[list[int]] = []
    for i in removed:
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    for run in runs:
        first, last = items[run[0]], items[run[-1]]
        previous = items[run[0] - 1] if run[0] > 0 else None
        following = items[run[-1] + 1] if run[-1] + 1 < len(items) else None
        if previous is None:
            if following is not None:
                edits.append((first.start, following.start, ""))
            continue
        gap = text[previous.end : first.start]
        if "\n" not in gap:
            edits.append((previous.end, last.end, ""))
            continue
        line_start = text.rfind("\n", 0, first.start) + 1
        newline = text.find("\n", last.end)
        line_end = len(text) if newline < 0 else newline
        rest = text[last.end : line_end].strip(" \t\r")
        if following is not None and following.start < line_end:
            edits.append((first.start, following.start, ""))
        elif rest == "\\":
            edits.append((line_start, min(line_end + 1, len(text)), ""))
        elif not rest and re.search(r"\\\r?\n", gap):
            # The last line of a continued command: the "\" before it goes too.
            edits.append((previous.end, last.end, ""))
        elif not rest:
            edits.append((line_start, min(line_end + 1, len(text)), ""))
        else:
            edits.append(
                (
                    first.start,
                    last.end + len(text[last.end : line_end]) - len(text[last.end : line_end].lstrip(" \t")),
                    "",
                )
            )
    return edits


class EditConflict(Exception):
    """Two edits touch the same text: a bug in a rule, never the user's script."""


def apply_edits(text: str, edits: list[tuple[int, int, str, int]], protected: list[tuple[int, int]]) -> str:
    out = []
    position = 0
    seen = set()
    for start, end, new, _order in sorted(edits, key=lambda e: (e[0], e[1], e[3])):
        if (start, end, new) in seen:
            continue
        seen.add((start, end, new))
        if start < position:
            raise EditConflict(f"overlapping edits at offset {start}")
        if end > start and any(s < end and start < e for s, e in protected):
            raise EditConflict(f"an edit at offset {start} reaches into a heredoc body")
        out.append(text[position:start])
        out.append(new)
        position = end
    out.append(text[position:])
    return "".join(out)


# ----- entry points -------------------------------------------------------------------------------------


@dataclass
class ShellResult:
    text: str
    findings: list[Finding]


def migrate_shell_text(
    text: str,
    path: str,
    plan: RulePlan,
    *,
    no_comments: bool = False,
    cell: int | None = None,
    files: dict[str, str] | None = None,
    python: str = "",
) -> ShellResult:
    """Migrate one shell text (a script, a notebook ``%%bash`` cell or a ``!`` line).

    Findings' lines are relative to ``text`` and carry ``cell``. What bashlex cannot parse is left
    alone. Marker comments and an added ``export`` are whole lines of their own, so the result may
    have more lines than ``text``. ``python`` is the code that runs next to it (a notebook's cells); ``files`` are
    the texts of files the notebook writes itself (normalised path -> text), which the rules read before the disk
    for a script the text launches.
    """
    apply_rules = hooks_for("shell")
    script = ShellScript(text, path, python)
    script.files = dict(files or {})
    edits = ShellEdits(script, {rule.meta.id for rule in plan.index.rules}, no_comments, cell)
    apply_rules(script, edits, plan)
    return ShellResult(edits.apply(), edits.findings)




def _migrate_shell(text: str, path: str, plan: RulePlan, no_comments: bool) -> tuple[str, list[Finding]]:
    result = migrate_shell_text(text, path, plan, no_comments=no_comments)
    return result.text, result.findings


def rewrite_shell(data: bytes, path: str, plan: RulePlan, no_comments: bool) -> Outcome:
    """One shell script, on the one outcome path (see sources.guarded)."""
    return text_adapter(decode_text, _migrate_shell)(data, path, plan, no_comments)
