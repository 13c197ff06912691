"""A rewritten file keeps its bytes' conventions: encoding, BOM, newlines, final newline, mode."""

from __future__ import annotations

import os
import stat

import pytest

from neuron_migrate.config import load_config
from neuron_migrate.migrate.runner import run
from neuron_migrate.migrate.sources import SourceError, decode, encode

STEP = "import torch_xla.core.xla_model as xm\n\n\ndef step(loss):\n    loss.backward()\n    xm.mark_step()\n"
STEPPED = "def step(loss):\n    loss.backward()\n"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def rewrite(tmp_path, name: str, data: bytes, mode: str = "write"):
    path = tmp_path / name
    path.write_bytes(data)
    report = run([path], load_config([path], jobs=1), mode=mode)
    [result] = report.files
    return result, path.read_bytes()


def test_latin1_file_with_a_coding_cookie_round_trips(tmp_path):
    source = "# -*- coding: latin-1 -*-\n" + STEP + "name = 'café'\n"
    result, after = rewrite(tmp_path, "legacy.py", source.encode("latin-1"))
    assert result.status == "changed", result.error
    assert after == ("# -*- coding: latin-1 -*-\n" + STEPPED + "name = 'café'\n").encode("latin-1")


def test_utf8_bom_is_kept(tmp_path):
    result, after = rewrite(tmp_path, "bom.py", b"\xef\xbb\xbf" + (STEP + "s = '\u00e9'\n").encode())
    assert result.status == "changed"
    assert after == b"\xef\xbb\xbf" + (STEPPED + "s = '\u00e9'\n").encode()


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_newline_style_is_kept(tmp_path, newline):
    result, after = rewrite(tmp_path, "nl.py", STEP.replace("\n", newline).encode())
    assert result.status == "changed"
    assert after == STEPPED.replace("\n", newline).encode()


def test_mixed_newlines_are_kept_line_by_line(tmp_path):
    source = STEP + "a = 1\r\nb = 2\n"
    _, after = rewrite(tmp_path, "mixed.py", source.encode())
    assert after == (STEPPED + "a = 1\r\nb = 2\n").encode()


def test_missing_final_newline_is_kept(tmp_path):
    source = STEP + "    return loss"
    result, after = rewrite(tmp_path, "eof.py", source.encode())
    assert after == (STEPPED + "    return loss").encode()
    assert result.diff.endswith("\\ No newline at end of file\n")


def test_file_mode_is_kept(tmp_path):
    path = tmp_path / "tool.py"
    path.write_text("#!/usr/bin/env python\n" + STEP)
    os.chmod(path, 0o755)
    run([path], load_config([path], jobs=1), mode="write")
    assert path.read_text() == "#!/usr/bin/env python\n" + STEPPED
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o755


def test_undecodable_file_fails_and_is_untouched(tmp_path):
    data = STEP.encode() + b"name = '\xff\xfe'\n"
    result, after = rewrite(tmp_path, "bad.py", data)
    assert result.status == "failed"
    assert result.error.startswith("7:9: byte 0xff is not valid utf-8")
    assert after == data


def test_form_feed_alone_is_not_a_change(tmp_path):
    # LibCST drops a form feed that starts a statement line; a file whose only difference would
    # be that (it names torch_xla, so it is parsed, but nothing in it is legacy) must stay byte-identical.
    source = "NAME = 'torch_xla'\n\x0c\ndef f():\n    pass\n\x0cdef g():\n    pass\n"
    result, after = rewrite(tmp_path, "ff.py", source.encode())
    assert after == source.encode()
    assert result.status == "unchanged"


TRAILING_COMMENTS = "main()\n    # old: cleanup()\n    # old: exit()\n"


def test_text_the_parser_cannot_keep_at_the_end_is_migrated_whole(tmp_path):
    # LibCST keeps only the last of these comment lines; a statement below them keeps them all.
    data = (STEP + TRAILING_COMMENTS).encode()
    result, after = rewrite(tmp_path, "lossy.py", data)
    assert result.status == "changed"
    assert after.decode().endswith(TRAILING_COMMENTS) and "torch_xla" not in after.decode()


def test_text_the_parser_cannot_keep_is_fine_when_nothing_is_migrated(tmp_path):
    data = ("import os  # runs on xla too\n" + TRAILING_COMMENTS).encode()
    result, after = rewrite(tmp_path, "lossy_noop.py", data)
    assert result.status == "unchanged" and after == data


def test_decode_and_encode():
    assert decode(b"x = 1\n").encoding == "utf-8"
    assert decode(b"\xef\xbb\xbfx = 1\n").encoding == "utf-8-sig"
    assert decode(b"\xef\xbb\xbfx = 1\n").text == "x = 1\n"
    assert decode(b"# coding: latin-1\nx = '\xe9'\n").text == "# coding: latin-1\nx = '\u00e9'\n"
    assert encode("x = 1\n", "utf-8-sig") == b"\xef\xbb\xbfx = 1\n"
    with pytest.raises(SourceError, match="bad encoding declaration"):
        decode(b"# coding: no-such-codec\nx = 1\n")
    with pytest.raises(SourceError, match="cannot be encoded as iso-8859-1"):
        encode("x = '\u20ac'\n", "iso-8859-1")


def test_text_the_parser_cannot_keep_fails_a_rewrite_when_no_statement_below_it_helps(tmp_path, monkeypatch):
    # Should LibCST lose lines a statement below them does not save, the file fails instead of losing them.
    from neuron_migrate.migrate import sources

    monkeypatch.setattr(sources, "_with_end_statement", lambda *args: None)
    data = (STEP + TRAILING_COMMENTS).encode()
    result, after = rewrite(tmp_path, "lossy.py", data)
    assert result.status == "failed"
    assert result.error.startswith("8:1: the parser would not keep this line exactly")
    assert after == data
