"""How fast is ``neuron-migrate audit`` on a large tree?

Builds the same tree as ``bench_rewrite.py`` (library modules of the standard library with a
legacy torch_xla file after every four of them) and times the real command in a subprocess, cold
(empty cache: the legacy pass parses every file with a trigger word) and warm (the legacy pass
served from the cache; the hazard scan always runs), keeping the best of ``--repeat`` runs.
Prints lines per second; exits non-zero when a cold run of the tree takes longer than the target.

    python benchmarks/bench_audit.py [--stdlib 800] [--repeat 3] [--work benchmarks/.work]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_rewrite import ROOT, _env, build_tree  # noqa: E402

# A 100k-line repository audited in under a minute on two cores, cold.
TARGET_SECONDS_PER_100K_LINES = 60.0


def timed(tree: Path, cache: Path, jobs: int) -> float:
    command = [sys.executable, "-m", "neuron_migrate", "audit", str(tree), "--fail-on", "never", "-q", "--jobs", str(jobs)]
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=_env(cache))
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"audit failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stdlib", type=int, default=800, help="standard-library modules in the tree")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="nm-bench-audit-"))
    tree, files = build_tree(work, args.stdlib)
    lines = sum(p.read_bytes().count(b"\n") for p in files)
    print(f"tree: {len(files)} files, {lines} lines")

    cold = []
    for _ in range(args.repeat):
        cache = work / "cache"
        shutil.rmtree(cache, ignore_errors=True)
        cold.append(timed(tree, cache, args.jobs))
    warm = min(timed(tree, work / "cache", args.jobs) for _ in range(args.repeat))
    best = min(cold)
    per_100k = best * 100_000 / lines
    print(f"audit cold: {best:.2f} s ({lines / best:,.0f} lines/s; {per_100k:.1f} s per 100k lines)")
    print(f"audit warm: {warm:.2f} s ({lines / warm:,.0f} lines/s)")
    ok = per_100k <= TARGET_SECONDS_PER_100K_LINES
    print(f"target: <= {TARGET_SECONDS_PER_100K_LINES:.0f} s per 100k lines cold: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
