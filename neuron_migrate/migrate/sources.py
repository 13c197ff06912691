"""Per-file-kind adapters: bytes on disk -> the engine -> bytes to write back.

The bytes a file had are the contract: its encoding (PEP 263 cookie or BOM), newline style and a
missing final newline all come back the same, so the only difference in a rewritten file is the
migration itself. Notebooks, shell scripts and requirement files plug in as further adapters.
"""

from __future__ import annotations

import codecs
import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from neuron_migrate.migrate.errors import InternalError, SourceError
from neuron_migrate.migrate.write import split_lines, unified_diff
from neuron_migrate.report.model import CHANGED, FAILED, UNCHANGED, Finding

if TYPE_CHECKING:
    from neuron_migrate.migrate.engine import RulePlan

UTF8_BOM = "utf-8-sig"


@dataclass(frozen=True)
class Decoded:
    text: str
    # The codec name tokenize reports; "utf-8-sig" means the file starts with a BOM.
    encoding: str


@dataclass
class Outcome:
    status: str
    output: bytes | None = None  # the new file content when status is CHANGED
    findings: list[Finding] = field(default_factory=list)
    error: str = ""
    diff: str = ""


def decode(data: bytes) -> Decoded:
    """A Python module's text, in the encoding its PEP 263 cookie or BOM names."""
    _refuse_wide(data)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise SourceError(f"bad encoding declaration: {exc}") from None
    try:
        # No newline translation: "\r\n" and "\r" reach the parser, which keeps them.
        return _no_nul(Decoded(data.decode(encoding), encoding))
    except UnicodeDecodeError as exc:
        hint = "add a coding declaration (e.g. `# -*- coding: latin-1 -*-`) or re-save the file as UTF-8"
        raise _undecodable(data, exc, encoding, hint) from None


# ----- input that is not text this tool reads ----------------------------------------------------------
# UTF-16 and UTF-32 files (Windows tools write them: PowerShell's `pip freeze > requirements.txt`) hold a NUL
# byte in most characters, so the byte scan finds no legacy word in them and they would pass as clean.
_WIDE_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
              (b"\xfe\xff", "UTF-16"))
_SAMPLE = 4096


def wide_encoding(data: bytes) -> str | None:
    """``"UTF-16 text (with a byte order mark)"`` or the like when ``data`` is UTF-16 or UTF-32, else None.
    Without a BOM, the NUL bytes give it away: text in those encodings that is mostly ASCII (code is) has
    them at fixed places in every two or four bytes."""
    for bom, name in _WIDE_BOMS:
        if data.startswith(bom):
            return f"{name} text (with a byte order mark)"
    sample = data[:_SAMPLE]
    if b"\x00" not in sample or len(sample) < 4:
        return None
    for width, name in ((4, "UTF-32"), (2, "UTF-16")):
        usable = len(sample) - len(sample) % width
        shares = [sample[k:usable:width].count(0) / (usable // width) for k in range(width)]
        if sum(share >= 0.9 for share in shares) == width - 1 and min(shares) <= 0.1:
            return f"{name} text (without a byte order mark)"
    return None


def not_read_reason(encoding: str) -> str:
    return f"{encoding}: not read; neuron-migrate reads UTF-8 (or what a coding comment names): re-save it as UTF-8"


def _refuse_wide(data: bytes) -> None:
    wide = wide_encoding(data)
    if wide is not None:
        raise SourceError(not_read_reason(wide))


NUL_MESSAGE = "a NUL byte (\\x00), which source code cannot hold (a binary file, or one written only in part?)"


def nul_place(text: str) -> tuple[int, int] | None:
    """(line, column), both from 1, of the first NUL character of ``text``; None when it has none."""
    at = text.find("\x00")
    if at < 0:
        return None
    return text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1


def _no_nul(decoded: Decoded) -> Decoded:
    """The decoded module, refused with the place of its first NUL: Python rejects such source wherever the NUL
    is. (Shell scripts keep theirs: bash skips NUL bytes and runs the rest.)"""
    place = nul_place(decoded.text)
    if place is not None:
        raise SourceError(f"{place[0]}:{place[1]}: {NUL_MESSAGE}")
    return decoded


_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def decode_text(data: bytes, cookie: bool = False) -> Decoded:
    """The text of a shell script, Dockerfile or dependency file: UTF-8 (a BOM is kept), or, when the
    format honours one (pip does for requirements files), the codec a coding comment in its first two
    lines names."""
    _refuse_wide(data)
    encoding = UTF8_BOM if data.startswith(codecs.BOM_UTF8) else "utf-8"
    if cookie and encoding == "utf-8":
        for line in data.splitlines()[:2]:
            match = _CODING.match(line)
            if match:
                encoding = match.group(1).decode("ascii")
                break
    try:
        return Decoded(data.decode(encoding), encoding)
    except LookupError:
        raise SourceError(f"1:1: unknown encoding {encoding!r} in the coding comment") from None
    except UnicodeDecodeError as exc:
        raise _undecodable(data, exc, encoding, "re-save the file as UTF-8") from None


def _undecodable(data: bytes, exc: UnicodeDecodeError, encoding: str, hint: str) -> SourceError:
    line = data.count(b"\n", 0, exc.start) + 1
    column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
    return SourceError(f"{line}:{column}: byte {data[exc.start]:#04x} is not valid {encoding}; {hint}")


def encode(text: str, encoding: str) -> bytes:
    try:
        return text.encode(encoding)
    except UnicodeEncodeError as exc:
        raise SourceError(f"the rewritten code cannot be encoded as {encoding}: {exc.reason}") from None


def guarded(rewrite: Callable[[], Outcome]) -> Outcome:
    """``rewrite()``'s outcome, or a failed one that leaves the file as it is: the one place where a
    problem with a file, or a bug in a rule, becomes that file's error (it never ends the run)."""
    try:
        return rewrite()
    except SourceError as exc:
        return failed(str(exc))
    except InternalError as exc:
        return failed(f"internal error: {exc}")
    except RecursionError:
        return failed("nested too deeply to parse")
    except Exception as exc:  # noqa: BLE001 - a bug in a rule must cost one file, not the whole run
        return failed(f"internal error: {_describe(exc)}")


def failed(message: str) -> Outcome:
    """``line:col: message; file left unchanged`` (no ``line:col`` when the message has none). The path is not
    part of it: every output already names the file the error belongs to."""
    return Outcome(FAILED, error=f"{message}; file left unchanged")


def text_outcome(decoded: Decoded, new: str, findings: list[Finding], path: str) -> Outcome:
    """Unchanged, or changed with the new bytes in the file's own encoding and the diff."""
    if new == decoded.text:
        return Outcome(UNCHANGED, None, findings)
    return Outcome(CHANGED, encode(new, decoded.encoding), findings, diff=unified_diff(decoded.text, new, path))


def text_adapter(decoder: Callable[[bytes], Decoded], migrate: Callable[[str, str, RulePlan, bool], tuple]) -> Adapter:
    """An adapter for a text format: ``decoder`` reads the bytes (raising :class:`SourceError`),
    ``migrate(text, path, plan, no_comments)`` gives the new text and the findings."""

    def adapter(data: bytes, path: str, plan: RulePlan, no_comments: bool) -> Outcome:
        def rewrite() -> Outcome:
            decoded = decoder(data)
            new, findings = migrate(decoded.text, path, plan, no_comments)
            return text_outcome(decoded, new, findings, path)

        return guarded(rewrite)

    return adapter


def rewrite_python(data: bytes, path: str, plan: RulePlan, no_comments: bool) -> Outcome:
    """One Python module."""
    return guarded(lambda: _rewrite_python(data, path, plan, no_comments))


def _rewrite_python(data: bytes, path: str, plan: RulePlan, no_comments: bool) -> Outcome:
    import libcst as cst

    from neuron_migrate.migrate.engine import migrate_python

    source = decode(data)
    try:
        result = migrate_python(source.text, path, plan, no_comments=no_comments)
    except cst.ParserSyntaxError as exc:
        raise SourceError(syntax_error(source.text, exc)) from None
    code = _keep_final_newline(source.text, result.code)
    if code == source.text:
        return Outcome(UNCHANGED, None, result.findings)
    reproduced = _keep_final_newline(source.text, result.reproduced)
    if reproduced != source.text:
        if code == reproduced:
            # Nothing was migrated: the only difference is what LibCST cannot reproduce.
            return Outcome(UNCHANGED, None, result.findings)
        if _strip_form_feeds(reproduced) != _strip_form_feeds(source.text):
            result = _with_end_statement(source.text, path, plan, no_comments)
            if result is None:
                raise SourceError(_lossy_message(source.text, reproduced))
            code = result.code
    return text_outcome(source, code, result.findings, path)


# LibCST loses indented comment lines and whitespace-only lines at the very end of a module; below a
# statement of the module's own they are kept. A file it would not print back is migrated with one.
_END_STATEMENT = "__neuron_migrate_end__ = None"


def _with_end_statement(text: str, path: str, plan, no_comments: bool):
    """``text`` migrated with a statement appended that keeps its last lines, then taken off again; None
    when that does not print the file back exactly either."""
    from neuron_migrate.migrate.engine import migrate_python

    newline = "\r\n" if "\r\n" in text else "\n"
    gap = "" if text.endswith(("\n", "\r")) else newline
    suffix = gap + _END_STATEMENT + newline
    result = migrate_python(text + suffix, path, plan, no_comments=no_comments)
    if result.reproduced != text + suffix or not result.code.endswith(suffix):
        return None
    result.code = result.code[: -len(suffix)]
    return result


def syntax_error(text: str, exc) -> str:
    """``line:col: syntax error: message``. Python's own parser words most errors better than
    LibCST's ("'(' was never closed"), so it is asked first; LibCST's message stays for syntax only
    LibCST rejects."""
    import ast

    place = nul_place(text)
    if place is not None:
        return f"{place[0]}:{place[1]}: {NUL_MESSAGE}"
    try:
        ast.parse(text)
    except SyntaxError as py_exc:
        if py_exc.lineno:
            return f"{py_exc.lineno}:{py_exc.offset or 1}: syntax error: {py_exc.msg}"
    except (ValueError, RecursionError, MemoryError):
        pass
    message = exc.message.removeprefix("parser error: ")
    return f"{exc.raw_line}:{exc.raw_column + 1}: syntax error: {message}"


def _describe(exc: BaseException) -> str:
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {_module_path(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _module_path(filename: str) -> str:
    """A file of the tool or a library as its package names it (``libcst/_nodes/base.py``): where it is
    installed on this machine says nothing to the bug report it goes into."""
    import os
    import sys

    roots = [os.path.abspath(entry) for entry in sys.path if entry]
    below = [root for root in roots if filename.startswith(root.rstrip(os.sep) + os.sep)]
    if not below:
        return os.path.basename(filename)
    return os.path.relpath(filename, max(below, key=len)).replace(os.sep, "/")


def _keep_final_newline(original: str, code: str) -> str:
    # LibCST drops the last newline of a file that uses bare "\r" line endings.
    if code and original.endswith(("\n", "\r")) and not code.endswith(("\n", "\r")):
        return code + ("\r\n" if original.endswith("\r\n") else original[-1])
    return code


def _strip_form_feeds(text: str) -> str:
    return text.replace("\x0c", "")


def _lossy_message(original: str, reproduced: str) -> str:
    """LibCST 1.9 does not print every file back exactly (several indented comment lines after
    the last statement of a module, for one); a rewrite would silently drop that text, so the file
    is refused instead, pointing at the first line concerned."""
    old, new = split_lines(original), split_lines(reproduced)
    line = next((i for i, (a, b) in enumerate(zip(old, new), start=1) if a != b), min(len(old), len(new)) + 1)
    return (
        f"{line}:1: the parser would not keep this line exactly (comments after the last "
        "statement of a block?), so the rewrite could lose it: move or remove the text there and run again"
    )


Adapter = Callable[[bytes, str, "RulePlan", bool], Outcome]

# File kind (see discover.kind_of) -> "module:function" of its adapter, imported on first use so that a run
# over Python files never imports the notebook, shell or requirement-file machinery.
_ADAPTER_HOMES = {
    "notebook": "neuron_migrate.migrate.notebook:rewrite_notebook",
    "shell": "neuron_migrate.migrate.shell:rewrite_shell",
    "requirements": "neuron_migrate.migrate.requirements:rewrite_requirements",
    "pyproject": "neuron_migrate.migrate.requirements:rewrite_pyproject",
    "setup_cfg": "neuron_migrate.migrate.requirements:rewrite_setup_cfg",
    "conda_env": "neuron_migrate.migrate.requirements:rewrite_conda_env",
    "dockerfile": "neuron_migrate.migrate.dockerfile:rewrite_dockerfile",
}


class _Adapters(dict):
    def __missing__(self, kind: str) -> Adapter:
        import importlib

        module, _, name = _ADAPTER_HOMES[kind].partition(":")
        adapter = getattr(importlib.import_module(module), name)
        self[kind] = adapter
        return adapter


ADAPTERS: dict[str, Adapter] = _Adapters(python=rewrite_python)
