"""Diffs and atomic writes: a file is untouched or fully rewritten, never half-written, even on Ctrl-C."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from neuron_migrate.migrate import write
from neuron_migrate.migrate.write import atomic_write, unified_diff

ROOT = Path(__file__).resolve().parents[1]


def test_unified_diff_has_git_paths():
    diff = unified_diff("a = 1\nb = 2\n", "a = 1\nb = 3\n", "pkg/m.py")
    assert diff.splitlines()[:2] == ["--- a/pkg/m.py", "+++ b/pkg/m.py"]
    assert "-b = 2\n+b = 3\n" in diff
    assert unified_diff("same\n", "same\n", "m.py") == ""


def test_unified_diff_marks_a_missing_final_newline_and_keeps_form_feeds_in_lines():
    diff = unified_diff("a = 1\n\x0cb = 2", "a = 1\n\x0cb = 3", "m.py")
    assert "-\x0cb = 2\n\\ No newline at end of file\n+\x0cb = 3\n\\ No newline at end of file\n" in diff


def test_atomic_write_replaces_content_and_keeps_mode(tmp_path):
    path = tmp_path / "run.py"
    path.write_bytes(b"old\n")
    os.chmod(path, 0o750)
    atomic_write(path, b"new\n")
    assert path.read_bytes() == b"new\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o750
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.py"]


@pytest.mark.skipif(os.name == "nt", reason="POSIX symlinks")
def test_atomic_write_through_a_symlink_keeps_the_link(tmp_path):
    target = tmp_path / "real.py"
    target.write_bytes(b"old\n")
    link = tmp_path / "link.py"
    os.symlink(target, link)
    atomic_write(target, b"new\n")
    assert link.is_symlink() and link.read_bytes() == b"new\n"


@pytest.mark.parametrize("error", [OSError("disk full"), KeyboardInterrupt()])
def test_failed_write_leaves_the_file_and_no_temp_file(tmp_path, monkeypatch, error):
    path = tmp_path / "m.py"
    path.write_bytes(b"old\n")

    def fail(src, dst):
        raise error

    monkeypatch.setattr(write.os, "replace", fail)
    with pytest.raises(type(error)):
        atomic_write(path, b"new\n")
    assert path.read_bytes() == b"old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py"]


def test_an_interrupt_during_a_write_is_delivered_after_it(tmp_path, monkeypatch):
    path = tmp_path / "m.py"
    path.write_bytes(b"old\n")
    real_replace = os.replace

    def interrupted_replace(src, dst):
        os.kill(os.getpid(), signal.SIGINT)
        real_replace(src, dst)

    monkeypatch.setattr(write.os, "replace", interrupted_replace)
    with pytest.raises(KeyboardInterrupt):
        atomic_write(path, b"new\n")
    assert path.read_bytes() == b"new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py"]


CHILD = """
import sys
from neuron_migrate.config import load_config
from neuron_migrate.migrate.runner import run

tree = sys.argv[1]
def progress(done, total, path):
    print(done, flush=True)
run([tree], load_config([tree], cache=False, jobs=2), mode="write", progress=progress)
print("finished", flush=True)
"""


@pytest.mark.slow
@pytest.mark.skipif(os.name == "nt", reason="POSIX signals and process groups")
def test_sigint_mid_run_leaves_every_file_whole(tmp_path, migrate):
    tree = tmp_path / "tree"
    tree.mkdir()
    # Each file differs (NNN is its number); the engine's rewrite of the template gives them all.
    template = "import torch_xla.core.xla_model as xm\n\n\ndef step_NNN(loss):\n    xm.mark_step()\n    return NNN\n"
    rewritten = migrate(template).code
    assert rewritten != template
    originals, expected = {}, {}
    for i in range(200):
        path = tree / f"m{i:03}.py"
        path.write_text(template.replace("NNN", str(i)))
        originals[path] = template.replace("NNN", str(i))
        expected[path] = rewritten.replace("NNN", str(i))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    # A new session, so that the signal goes to the whole process group as Ctrl-C in a terminal would.
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tree)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        # Wait until some files are done, then interrupt while the rest are in flight.
        done = 0
        while done < 20:
            line = child.stdout.readline()
            assert line, "child ended early: " + child.stderr.read()
            assert line.strip() != "finished", "run ended before the interrupt"
            done = int(line)
        os.killpg(child.pid, signal.SIGINT)
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    assert child.returncode != 0 and "KeyboardInterrupt" in err
    written = untouched = 0
    for path, source in originals.items():
        text = path.read_text()
        assert text in (source, expected[path]), f"{path.name} is neither the original nor the rewrite"
        written += text == expected[path]
        untouched += text == source
    assert written >= 20 and untouched >= 1
    assert sorted(p.name for p in tree.iterdir()) == sorted(p.name for p in originals)


# ----- the diff: valid whatever the edits, and linear ------------------------------------------------------


def _apply(old: str, diff: str) -> str:
    """``old`` with ``diff`` applied, checking every context and removed line against it."""
    import re

    old_lines, lines = write.split_lines(old), diff.splitlines(keepends=True)
    assert lines[0].startswith("--- a/") and lines[1].startswith("+++ b/")
    out, position, k = [], 0, 2
    while k < len(lines):
        head = re.fullmatch(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@\n", lines[k])
        assert head, lines[k]
        start = int(head[1]) - (0 if head[2] == "0" else 1)
        assert start >= position
        out.extend(old_lines[position:start])
        position, k = start, k + 1
        while k < len(lines) and not lines[k].startswith("@@"):
            sign, body = lines[k][0], lines[k][1:]
            if k + 1 < len(lines) and lines[k + 1].startswith("\\ No newline"):
                body, k = body[:-1], k + 1
            if sign in " -":
                assert old_lines[position] == body
                position += 1
            if sign in " +":
                out.append(body)
            k += 1
    return "".join(out + old_lines[position:])


def test_unified_diff_of_random_edits_applies_and_matches_difflib_on_plain_edits():
    import difflib
    import random

    rng = random.Random(7)
    for _ in range(3000):
        old = [rng.choice("abcdefg") + rng.choice(["\n", "\n", "\r\n"]) for _ in range(rng.randrange(0, 40))]
        new = list(old)
        for _ in range(rng.randrange(0, 8)):
            where = rng.randrange(len(new) + 1)
            if rng.random() < 0.4 and where < len(new):
                del new[where]
            else:
                new.insert(where, rng.choice("abcdefgxyz") + "\n")
        if new and rng.random() < 0.2:
            new[-1] = new[-1].rstrip()
        before, after = "".join(old), "".join(new)
        diff = unified_diff(before, after, "m.py")
        assert (diff == "") == (before == after)
        if diff:
            assert _apply(before, diff) == after, (before, after, diff)
    # Lines that occur once (real code) align as difflib aligns them.
    before = "".join(f"line {i}\n" for i in range(200))
    after = before.replace("line 50\n", "line 50 changed\n").replace("line 120\n", "")
    expected = "".join(difflib.unified_diff(write.split_lines(before), write.split_lines(after), "a/m.py", "b/m.py"))
    assert unified_diff(before, after, "m.py") == expected


def _many_edits(count: int) -> tuple[str, str]:
    """A file of ``count`` small functions that each call ``xm.mark_step()``, and the same after the edit:
    thousands of alike changed lines, the case on which difflib turns quadratic."""
    old = "import torch_xla.core.xla_model as xm\n\n" + "".join(
        f"def step_{i}(loss):\n    xm.mark_step()\n    return loss\n\n" for i in range(count)
    )
    return old, old.replace("import torch_xla.core.xla_model as xm\n", "import torch\n").replace(
        "xm.mark_step()", "torch.neuron.synchronize()"
    )


@pytest.mark.parametrize("tool", [["git", "apply"], ["patch", "-p1", "--quiet", "-i"]], ids=["git", "patch"])
def test_the_diff_of_a_file_with_12000_edits_applies(tmp_path, tool):
    # How fast it is produced is measured by benchmarks/bench_edits.py, not here.
    old, new = _many_edits(12_000)
    diff = unified_diff(old, new, "big.py")
    assert diff.count("\n-    xm.mark_step()\n") == 12_000
    (tmp_path / "big.py").write_text(old)
    (tmp_path / "change.patch").write_text(diff)
    done = subprocess.run([*tool, "change.patch"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr + done.stdout
    assert (tmp_path / "big.py").read_text() == new


def test_diffs_computed_off_gives_no_diff_and_nests():
    with write.diffs_computed(False):
        assert unified_diff("a\n", "b\n", "m.py") == ""
        with write.diffs_computed(True):
            assert unified_diff("a\n", "b\n", "m.py")
        assert unified_diff("a\n", "b\n", "m.py") == ""
    assert unified_diff("a\n", "b\n", "m.py")
