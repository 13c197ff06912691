"""How fast is a rewrite run compared with simply parsing the same files with LibCST?

Uses the real legacy corpus when it is there (``--corpus DIR``, else ``$NEURON_CORPUS``, else the
temporary folder's ``neuron-corpus``), and the repository's legacy fixtures when it is not (it says
so). Side by side, in one run:

  (a) the corpus' ``.py`` files: a bare LibCST pass (parse, resolve qualified names, codegen) against
      ``rewrite --check --no-cache --jobs 1`` on them, both CPU seconds       target: <= 1.5x the bare pass
  (b) a mixed tree, those files plus modules of the standard library (one legacy file in five):
      ``rewrite --check`` with an empty cache and the default pool, wall seconds,
      against the bare pass over the same tree                                target: >= 4x faster
  (c) the same tree again with a warm cache                                   target: >= 6x faster than (b)
  (d) ``rewrite --check --no-cache`` on 20 files, 10 legacy ones of the corpus (the smallest, the size
      of a commit's worth of changed files) and 10 plain modules, wall seconds including interpreter
      start                                                                   target: < 1 s

The runs go through the real command in a subprocess, the way a user or pre-commit runs it, and keep
the best of ``--repeat`` (other load on the machine only ever makes a run slower). The bare pass runs
in a subprocess too, so that both sides pay the same imports. Exits non-zero when a target is missed.

    python benchmarks/bench_rewrite.py [--corpus DIR] [--repeat 3] [--work benchmarks/.work]
    python benchmarks/bench_rewrite.py --profile   # also cProfile one cold run in-process
"""

from __future__ import annotations

import argparse
import ast
import compileall
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
# Standard-library folders that hold tests, tools or deliberately broken code rather than library code.
SKIP_PARTS = {"test", "tests", "idlelib", "lib2to3", "turtledemo", "site-packages", "__pycache__", "ensurepip"}
MAX_MODULE_BYTES = 50_000
PLAIN_PER_LEGACY = 4  # one legacy file in five
SMALL_RUN = 10  # legacy files in (d), and as many plain ones
LEGACY_WORDS = (b"torch_xla", b"torch_neuronx", b"neuronx_distributed", b"optimum")

TARGET_ENGINE_VS_BARE = 1.5
TARGET_MIXED_VS_BARE = 4.0
TARGET_WARM_VS_COLD = 6.0
TARGET_SMALL_SECONDS = 1.0

# The bare pass: what any LibCST codemod pays per file. Prints CPU seconds and files parsed as JSON.
BARE = """
import json, sys, time
t = time.process_time()
import libcst as cst
from libcst.metadata import MetadataWrapper, QualifiedNameProvider
parsed = 0
for name in sys.stdin.read().splitlines():
    try:
        module = cst.parse_module(open(name, "rb").read())
    except Exception:
        continue
    parsed += 1
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    wrapper.resolve(QualifiedNameProvider)
    wrapper.module.code
print(json.dumps({"cpu": time.process_time() - t, "parsed": parsed}))
"""


def corpus_folder(given: Path | None) -> Path | None:
    for candidate in (given, os.environ.get("NEURON_CORPUS"), Path(tempfile.gettempdir()) / "neuron-corpus"):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


def legacy_sources(corpus: Path | None) -> list[Path]:
    """The corpus' ``.py`` files that parse; without a corpus, the legacy fixtures."""
    if corpus is not None:
        found = sorted(corpus.rglob("*.py"))
    else:
        found = sorted(FIXTURES.glob("rules/*/*.before.py")) + sorted(FIXTURES.glob("projects/**/*.py"))
        found = [p for p in found if any(word in p.read_bytes() for word in LEGACY_WORDS)]
    usable = [p for p in found if _parses(p.read_bytes())]
    if not usable:
        sys.exit(f"no legacy Python files under {corpus or FIXTURES}")
    return usable


def stdlib_modules(count: int) -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    chosen = []
    for path in sorted(root.rglob("*.py")):
        if SKIP_PARTS & set(path.relative_to(root).parts):
            continue
        data = path.read_bytes()
        if len(data) > MAX_MODULE_BYTES or not _parses(data) or any(word in data for word in LEGACY_WORDS):
            continue
        chosen.append(path)
        if len(chosen) == count:
            break
    return chosen


def _parses(data: bytes) -> bool:
    try:
        ast.parse(data)
    except (SyntaxError, ValueError):
        return False
    return True


def copy_tree(folder: Path, legacy: list[Path], plain: list[Path]) -> tuple[list[Path], list[Path]]:
    """``legacy`` and ``plain`` files copied under ``folder``, one legacy file after every
    PLAIN_PER_LEGACY plain ones, in package folders of 50: (the legacy copies, the plain copies)."""
    if folder.exists():
        shutil.rmtree(folder)
    order, plain_left = [], iter(plain)
    for source in legacy:
        order.extend((p, False) for _, p in zip(range(PLAIN_PER_LEGACY), plain_left))
        order.append((source, True))
    order.extend((p, False) for p in plain_left)
    copies: tuple[list[Path], list[Path]] = ([], [])
    for i, (source, is_legacy) in enumerate(order):
        target = folder / f"pkg{i // 50:02}" / f"m{i:04}_{source.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        copies[0 if is_legacy else 1].append(target)
    return copies


def _env(cache_dir: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("NEURON_MIGRATE_CACHE_DIR", None)
    if cache_dir is not None:
        env["NEURON_MIGRATE_CACHE_DIR"] = str(cache_dir)
    return env


def run_child(command: list[str], cache_dir: Path | None, stdin: str | None = None) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system, the pool's workers included) and stdout of one run."""
    _cpu_since()
    started = time.perf_counter()
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             cwd=ROOT, env=_env(cache_dir))
    out, err = child.communicate(stdin.encode() if stdin is not None else None)
    wall = time.perf_counter() - started
    if child.returncode not in (0, 1):
        sys.exit(f"{' '.join(command[:6])} failed (exit {child.returncode}):\n{out.decode()[-2000:]}\n"
                 f"{err.decode()[-2000:]}")
    return wall, _cpu_since(), out.decode()


_last_children_cpu = [0.0]


def _cpu_since() -> float:
    """CPU seconds of the children reaped since the last call: a reaped command's own reaped children (the
    pool's workers) are counted in it."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = usage.ru_utime + usage.ru_stime
    spent, _last_children_cpu[0] = total - _last_children_cpu[0], total
    return spent


def rewrite(paths: list[Path], cache_dir: Path | None, jobs: int | None = None) -> tuple[float, float]:
    command = [sys.executable, "-m", "neuron_migrate", "rewrite", *map(str, paths), "--check", "--quiet"]
    command += ["--no-cache"] if cache_dir is None else []
    command += ["--jobs", str(jobs)] if jobs else []
    wall, cpu, _ = run_child(command, cache_dir)
    return wall, cpu


def bare_pass(files: list[Path]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (inside the child: the LibCST import and the files) and files parsed."""
    wall, _, out = run_child([sys.executable, "-c", BARE], None, stdin="\n".join(map(str, files)))
    result = json.loads(out)
    return wall, result["cpu"], result["parsed"]


def best(runs: list[tuple[float, float]]) -> tuple[float, float]:
    """The least disturbed run: lowest wall time, and the lowest CPU time seen."""
    return min(w for w, _ in runs), min(c for _, c in runs)


def profile_cold_run(tree: Path, out: Path) -> None:
    import cProfile
    import pstats

    sys.path.insert(0, str(ROOT))
    from neuron_migrate.config import load_config
    from neuron_migrate.migrate.runner import run

    config = load_config([tree], cache=False, jobs=1)
    profiler = cProfile.Profile()
    profiler.enable()
    run([tree], config, mode="check", diffs=False)
    profiler.disable()
    profiler.dump_stats(out)
    print(f"\ncProfile of one cold in-process run (jobs=1), top 25 by cumulative time; stats in {out}")
    pstats.Stats(str(out)).sort_stats("cumulative").print_stats(25)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=None, help="folder of real legacy code")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each rewrite measure; the best counts")
    parser.add_argument("--work", type=Path, default=ROOT / "benchmarks" / ".work")
    parser.add_argument("--profile", action="store_true", help="also cProfile a cold in-process run")
    args = parser.parse_args()

    corpus = corpus_folder(args.corpus)
    legacy = legacy_sources(corpus)
    if corpus is None:
        print("no legacy corpus found (--corpus, $NEURON_CORPUS, or neuron-corpus in the temporary folder): "
              f"using the {len(legacy)} legacy fixtures of the repository instead")
    plain = stdlib_modules(PLAIN_PER_LEGACY * len(legacy))
    args.work.mkdir(parents=True, exist_ok=True)
    legacy_files, _ = copy_tree(args.work / "legacy", legacy, [])
    mixed_legacy, mixed_plain = copy_tree(args.work / "mixed", legacy, plain)
    mixed = mixed_legacy + mixed_plain
    smallest = sorted(legacy, key=lambda p: p.stat().st_size)[:SMALL_RUN]
    copy_tree(args.work / "small", smallest, plain[:SMALL_RUN])
    size = sum(f.stat().st_size for f in legacy_files)
    print(f"legacy: {len(legacy_files)} .py files, {size / 1e6:.2f} MB, from {corpus or FIXTURES}; mixed tree: "
          f"{len(mixed)} files ({len(plain)} standard-library modules); {os.cpu_count()} CPUs")

    # An installed package has its bytecode compiled at install time; a checkout run with
    # PYTHONDONTWRITEBYTECODE set would compile every module again in every run.
    compileall.compile_dir(ROOT / "neuron_migrate", quiet=1)
    legacy_tree, mixed_tree = args.work / "legacy", args.work / "mixed"

    print("(a) bare LibCST pass and rewrite --jobs 1 over the legacy files ...", flush=True)
    bare_legacy = bare_pass(legacy_files)
    engine_runs = [rewrite([legacy_tree], None, jobs=1) for _ in range(args.repeat)]
    engine = best(engine_runs)
    print("(b), (c) the mixed tree, cold and warm ...", flush=True)
    bare_plain = bare_pass(mixed_plain)  # the legacy copies cost what (a) measured
    cold, warm = [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="nm-bench-cache-") as cache:
            cold.append(rewrite([mixed_tree], Path(cache)))  # an empty cache, which this run fills
            warm.append(rewrite([mixed_tree], Path(cache)))
    print("(d) 20 files ...", flush=True)
    small_runs = [rewrite([args.work / "small"], None) for _ in range(max(args.repeat, 5))]

    bare_mixed_wall = bare_legacy[0] + bare_plain[0]
    bare_mixed_cpu = bare_legacy[1] + bare_plain[1]
    (b, b_cpu), (c, c_cpu), (d, d_cpu) = best(cold), best(warm), best(small_runs)
    small_kb = sum(p.stat().st_size for p in smallest) / 1e3
    rows = [
        (f"(a) bare LibCST pass, {bare_legacy[2]} legacy files", bare_legacy[0], bare_legacy[1], "", None),
        ("(a) rewrite --check --no-cache --jobs 1, same files", *engine,
         f"cpu {engine[1] / bare_legacy[1]:.2f}x the bare pass, want <= {TARGET_ENGINE_VS_BARE:g}x",
         engine[1] / bare_legacy[1] <= TARGET_ENGINE_VS_BARE),
        (f"(b) bare LibCST pass, mixed tree of {len(mixed)} files", bare_mixed_wall, bare_mixed_cpu, "", None),
        ("(b) rewrite --check, mixed tree, empty cache, default pool", b, b_cpu,
         f"{bare_mixed_wall / b:.1f}x faster than the bare pass (wall), want >= {TARGET_MIXED_VS_BARE:g}x",
         bare_mixed_wall / b >= TARGET_MIXED_VS_BARE),
        ("(c) the same, warm cache", c, c_cpu, f"{b / c:.1f}x faster than (b), want >= {TARGET_WARM_VS_COLD:g}x",
         b / c >= TARGET_WARM_VS_COLD),
        (f"(d) 20 files ({SMALL_RUN} legacy, {small_kb:.0f} KB), with interpreter start", d, d_cpu,
         f"want < {TARGET_SMALL_SECONDS:g} s wall", d < TARGET_SMALL_SECONDS),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"\n{'measure':<{width}}  {'wall s':>8}  {'cpu s':>8}  target")
    for name, seconds, cpu, target, ok in rows:
        verdict = "" if ok is None else ("ok" if ok else "MISSED")
        print(f"{name:<{width}}  {seconds:>8.2f}  {cpu:>8.2f}  {target} {verdict}")
    print(f"\nall runs (wall s): (a) {_fmt(engine_runs)}; (b) {_fmt(cold)}; "
          f"(c) {_fmt(warm)}; (d) {_fmt(small_runs)}")
    print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")

    if args.profile:
        profile_cold_run(mixed_tree, args.work / "cold.prof")
    return 0 if all(ok is not False for *_, ok in rows) else 1


def _fmt(values: list[tuple[float, float]]) -> str:
    return ", ".join(f"{wall:.2f}" for wall, _ in values)


if __name__ == "__main__":
    sys.exit(main())
