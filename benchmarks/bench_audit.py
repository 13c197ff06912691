"""How fast is ``neuron-migrate audit`` on a large tree?

Builds the same tree as ``bench_rewrite.py`` (library modules of the standard library with a
legacy torch_xla file after every four of them), or takes ``--tree DIR`` (a copy of a real project), and
times the real command in a subprocess, cold (empty cache: the legacy pass and the hazard checks parse every
file with a trigger word) and warm (both served from the cache), keeping the best of ``--repeat`` runs. Side
by side it times a warm ``rewrite --check`` of the same tree: a warm audit does what it does plus reading the
cached hazards, so it should cost little more.
Prints lines per second; exits non-zero when a cold run of the tree takes longer than the target or the warm
audit more than 1.5x the warm ``rewrite --check``.

    python benchmarks/bench_audit.py [--stdlib 800 | --tree DIR] [--repeat 3] [--work benchmarks/.work]
"""

from __future__ import annotations

import argparse
import compileall
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_rewrite import ROOT, _env, copy_tree, corpus_folder, legacy_sources, stdlib_modules  # noqa: E402

# A 100k-line repository audited in under a minute on two cores, cold.
TARGET_SECONDS_PER_100K_LINES = 60.0
# A warm audit against a warm `rewrite --check` of the same tree.
TARGET_WARM_RATIO = 1.5

COMMANDS = {
    "audit": ["audit", "--fail-on", "never", "-q"],
    "rewrite": ["rewrite", "--check", "-q"],
}


def timed(tree: Path, cache: Path, jobs: int, what: str = "audit") -> float:
    command = [sys.executable, "-m", "neuron_migrate", *COMMANDS[what], str(tree), "--jobs", str(jobs)]
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=_env(cache))
    elapsed = time.perf_counter() - started
    # rewrite --check exits 1 when files would change, and either exits 2 for a file it cannot parse
    if proc.returncode not in (0, 1, 2) or "Traceback" in proc.stderr:
        sys.exit(f"{what} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return elapsed


def build_tree(work: Path, stdlib: int, given: Path | None) -> tuple[Path, list[Path]]:
    """A copy of ``given`` (every kind of file, as found), or the legacy corpus' ``.py`` files (the repository's
    legacy fixtures without one) with ``stdlib`` standard-library modules among them."""
    tree = work / "audit-tree"
    if given is not None:
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(given, tree, symlinks=True)
        return tree, [p for p in tree.rglob("*") if p.is_file()]
    legacy, plain = copy_tree(tree, legacy_sources(corpus_folder(None)), stdlib_modules(stdlib))
    return tree, legacy + plain


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stdlib", type=int, default=800, help="standard-library modules in the tree")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--tree", type=Path, default=None, help="time a copy of this folder instead")
    args = parser.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="nm-bench-audit-"))
    work.mkdir(parents=True, exist_ok=True)
    tree, files = build_tree(work, args.stdlib, args.tree)
    # As an installed package: a checkout run with PYTHONDONTWRITEBYTECODE would compile every module each run.
    compileall.compile_dir(ROOT / "neuron_migrate", quiet=1)
    lines = sum(p.read_bytes().count(b"\n") for p in files)
    print(f"tree: {len(files)} files, {lines} lines")

    cold = []
    for _ in range(args.repeat):
        cache = work / "cache"
        shutil.rmtree(cache, ignore_errors=True)
        cold.append(timed(tree, cache, args.jobs))
    # Alternated, so that both see the same load on a shared machine.
    warm, rewrite = [], []
    for _ in range(args.repeat):
        warm.append(timed(tree, work / "cache", args.jobs))
        rewrite.append(timed(tree, work / "cache", args.jobs, "rewrite"))
    best, warm, rewrite = min(cold), min(warm), min(rewrite)
    per_100k = best * 100_000 / lines
    ratio = warm / rewrite
    print(f"audit cold: {best:.2f} s ({lines / best:,.0f} lines/s; {per_100k:.1f} s per 100k lines)")
    print(f"audit warm: {warm:.2f} s ({lines / warm:,.0f} lines/s)")
    print(f"rewrite --check warm: {rewrite:.2f} s; audit warm / rewrite --check warm: {ratio:.2f}x")
    ok = per_100k <= TARGET_SECONDS_PER_100K_LINES
    print(f"target: <= {TARGET_SECONDS_PER_100K_LINES:.0f} s per 100k lines cold: {'met' if ok else 'MISSED'}")
    fits = ratio <= TARGET_WARM_RATIO
    print(f"target: warm audit <= {TARGET_WARM_RATIO}x warm rewrite --check: {'met' if fits else 'MISSED'}")
    return 0 if ok and fits else 1


if __name__ == "__main__":
    sys.exit(main())
