"""What one edit costs as a file grows: the cost curve of ``rewrite`` on files with N edits.

Each file holds N small functions that each call ``xm.mark_step()`` (three lines apiece), so N is the
number of edits and the file has 3N + 1 lines. For N = 100, 200, 400 ... 12,800 it runs
``neuron-migrate rewrite FILE --check --no-cache --jobs 1`` and the same with ``--diff`` (the diff
computed and printed) in a fresh process, and prints wall seconds, CPU seconds, peak memory and
seconds per edit. A linear engine shows a flat seconds-per-edit column.

The last row is the big file on its own: 12,000 edits, 36,001 lines; targets: under 30 s and under
1 GB of peak memory, with and without ``--diff``.

    python benchmarks/bench_edits.py [--max 12800] [--timeout 600]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIG_EDITS = 12_000
TARGET_BIG_SECONDS = 30.0
TARGET_BIG_RSS_MB = 1024


def legacy_file(edits: int) -> str:
    header = "import torch_xla.core.xla_model as xm\n"
    return header + "".join(f"def step_{i}(loss):\n    xm.mark_step()\n    return loss\n" for i in range(edits))


def measure(path: Path, diff: bool, timeout: float) -> tuple[float, float, float, int] | None:
    """Wall s, CPU s, peak RSS in MB and exit code of one run in a fresh process; None on a timeout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    mode = "--diff" if diff else "--check"
    command = [sys.executable, "-m", "neuron_migrate", "rewrite", str(path), mode, "--no-cache", "--jobs", "1", "-q"]
    started = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        child = subprocess.Popen(command, stdout=sink, stderr=sink, env=env, cwd=path.parent)
    deadline = started + timeout
    while True:
        # wait4 gives this child's own resource use (RUSAGE_CHILDREN would keep the largest peak seen so far).
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            child.kill()
            os.wait4(child.pid, 0)
            return None
        time.sleep(0.02)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, child.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max", type=int, default=12_800, help="largest N of the curve")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before one run is given up")
    args = parser.parse_args()

    sizes = []
    n = 100
    while n <= args.max:
        sizes.append(n)
        n *= 2
    rows = [(n, f"N={n}") for n in sizes] + [(BIG_EDITS, f"big: {BIG_EDITS:,} edits")]
    print(f"{'file':<22} {'lines':>7} {'mode':<7} {'wall s':>8} {'cpu s':>8} {'peak MB':>8} {'ms per edit':>12}")
    missed = []
    with tempfile.TemporaryDirectory(prefix="nm-bench-edits-") as work:
        for edits, label in rows:
            path = Path(work) / f"steps_{edits}.py"
            text = legacy_file(edits)
            path.write_text(text)
            for diff in (False, True):
                mode = "--diff" if diff else "--check"
                result = measure(path, diff, args.timeout)
                if result is None:
                    print(f"{label:<22} {text.count(chr(10)):>7} {mode:<7} timed out after {args.timeout:g} s")
                    missed.append(f"{label} {mode}: timed out")
                    continue
                wall, cpu, rss, code = result
                note = "" if code == 1 else f"  (exit {code}: expected 1, the file changes)"
                print(f"{label:<22} {text.count(chr(10)):>7} {mode:<7} {wall:>8.2f} {cpu:>8.2f} {rss:>8.0f} "
                      f"{1000 * cpu / edits:>12.3f}{note}", flush=True)
                if edits == BIG_EDITS and (wall > TARGET_BIG_SECONDS or rss > TARGET_BIG_RSS_MB):
                    missed.append(f"{label} {mode}: {wall:.1f} s, {rss:.0f} MB")
            path.unlink()
    print(f"\ntarget for the big file: < {TARGET_BIG_SECONDS:g} s wall and < {TARGET_BIG_RSS_MB} MB peak, "
          f"with and without --diff: {'MISSED: ' + '; '.join(missed) if missed else 'ok'}")
    print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
