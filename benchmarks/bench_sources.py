"""How fast are the files that are not Python: launch scripts, notebooks and dependency files?

Builds a tree of project folders, each holding copies of the shell, notebook and requirement
fixtures under the names the discovery looks for (``run_N.sh``, ``explore_N.ipynb``,
``requirements-N.txt``, ``Dockerfile.N``, ``pyproject.toml``, ``setup.cfg``, ``environment.yml``),
then measures:

  (a) ``neuron-migrate rewrite TREE --check`` with an empty cache (cold)
  (b) the same command again (warm: everything from the cache)

Both run the real command in a subprocess and keep the best of ``--repeat`` runs. Exits non-zero
when a target is missed: (a) at least 1,500 lines a CPU-second over the whole tree (the notebooks'
code cells go through the Python engine), (b) at least 6x faster than (a).

    python benchmarks/bench_sources.py [--projects 60] [--repeat 3] [--work benchmarks/.work]
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_rewrite import ROOT, command, timed_run  # noqa: E402

FIXTURES = ROOT / "fixtures"
# The Python engine does about 1,700 lines of legacy code a CPU-second (LibCST metadata dominates);
# scripts and dependency files must not be the slow part of a run.
TARGET_LINES_PER_CPU_SECOND = 1_500
TARGET_WARM_VS_COLD = 6.0
# Dependency files that sit at a project's root under one name only.
ROOT_FILES = {".toml": "pyproject.toml", ".cfg": "setup.cfg", ".yml": "environment.yml"}


def fixture_files() -> dict[str, list[Path]]:
    found = {
        "shell": sorted(FIXTURES.glob("shell/*/*.before.sh")) + sorted(FIXTURES.glob("shell/*/*.noop.sh")),
        "notebook": sorted(FIXTURES.glob("notebook/*.before.ipynb")) + sorted(FIXTURES.glob("notebook/*.noop.ipynb")),
        "requirements": sorted(FIXTURES.glob("requirements/*/*.before.txt")),
        "project": sorted(p for p in FIXTURES.glob("requirements/*/*.before.*") if p.suffix in ROOT_FILES),
        "dockerfile": sorted(FIXTURES.glob("dockerfile/*/*.before.Dockerfile"))
        + sorted(FIXTURES.glob("dockerfile/*/*.noop.Dockerfile")),
    }
    empty = [kind for kind, paths in found.items() if not paths]
    if empty:
        sys.exit(f"no fixtures of kind {', '.join(empty)} under fixtures/")
    return found


def build_tree(work: Path, projects: int) -> tuple[Path, int, int]:
    """``projects`` folders with every shell, notebook and requirements fixture; the project files
    (pyproject.toml, setup.cfg, environment.yml) rotate, one of each kind per folder."""
    tree = work / "sources"
    if tree.exists():
        shutil.rmtree(tree)
    found = fixture_files()
    count = lines = 0
    for p in range(projects):
        folder = tree / f"project{p:03}"
        folder.mkdir(parents=True)
        copies = [(s, folder / f"run_{i:02}.sh") for i, s in enumerate(found["shell"])]
        copies += [(s, folder / f"explore_{i:02}.ipynb") for i, s in enumerate(found["notebook"])]
        copies += [(s, folder / f"requirements-{i:02}.txt") for i, s in enumerate(found["requirements"])]
        copies += [(s, folder / f"Dockerfile.{i:02}") for i, s in enumerate(found["dockerfile"])]
        by_suffix: dict[str, list[Path]] = {}
        for source in found["project"]:
            by_suffix.setdefault(source.suffix, []).append(source)
        copies += [(paths[p % len(paths)], folder / ROOT_FILES[suffix]) for suffix, paths in by_suffix.items()]
        for source, target in copies:
            shutil.copyfile(source, target)
            count += 1
            lines += source.read_bytes().count(b"\n")
    return tree, count, lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--projects", type=int, default=60, help="project folders to build")
    parser.add_argument("--repeat", type=int, default=3, help="runs of (a) and (b); the best counts")
    parser.add_argument("--work", type=Path, default=ROOT / "benchmarks" / ".work")
    args = parser.parse_args()

    args.work.mkdir(parents=True, exist_ok=True)
    tree, count, lines = build_tree(args.work, args.projects)
    print(f"tree: {count} files, {lines} lines, {os.cpu_count()} CPUs")
    compileall.compile_dir(ROOT / "neuron_migrate", quiet=1)
    cmd = command()

    cold, cold_cpu = [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as cache:
            wall, cpu = timed_run(cmd, [tree], Path(cache))
        cold.append(wall)
        cold_cpu.append(cpu)
    with tempfile.TemporaryDirectory() as cache:
        timed_run(cmd, [tree], Path(cache))
        warm = [timed_run(cmd, [tree], Path(cache))[0] for _ in range(args.repeat)]

    best_cold, best_cpu, best_warm = min(cold), min(cold_cpu), min(warm)
    rate = lines / best_cpu
    print(f"(a) cold: {best_cold:.2f} s wall, {best_cpu:.2f} s cpu, {rate:,.0f} lines per cpu-second")
    print(f"(b) warm: {best_warm:.2f} s wall, (a)/(b) = {best_cold / best_warm:.1f}x")
    missed = []
    if rate < TARGET_LINES_PER_CPU_SECOND:
        missed.append(f"cold rate {rate:,.0f} < {TARGET_LINES_PER_CPU_SECOND:,} lines per cpu-second")
    if best_cold / best_warm < TARGET_WARM_VS_COLD:
        missed.append(f"warm speed-up {best_cold / best_warm:.1f}x < {TARGET_WARM_VS_COLD}x")
    for line in missed:
        print(f"MISSED: {line}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
