"""Regenerate the committed snapshots: the expected outputs of the corpus test
(``fixtures/projects/**/<name>.expected.py``) and the findings of every fixture case
(``fixtures/<kind>/<ID>/<case>.findings``, ``<case>.noop.findings``; see ``fixture_harness``).

Run it after changing a rule, then read ``git diff fixtures``: every changed line is a change in
what users get.

    python tests/update_snapshots.py           # rewrite the snapshots
    python tests/update_snapshots.py --check   # exit 1 if any snapshot is out of date
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from fixture_harness import all_cases, findings_files, snapshot  # noqa: E402
from test_corpus import corpus_files, snapshot_for  # noqa: E402

from neuron_migrate.migrate.engine import RulePlan, migrate_python  # noqa: E402


def corpus_snapshots(plan):
    for path in corpus_files():
        yield snapshot_for(path), migrate_python(path.read_text(encoding="utf-8"), path.name, plan).code


def findings_snapshots():
    for case in all_cases():
        yield case.findings_file, snapshot(case)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    plan = RulePlan.build()
    stale, wanted = [], set()
    for target, text in (*corpus_snapshots(plan), *findings_snapshots()):
        wanted.add(target)
        if target.exists() and target.read_text(encoding="utf-8") == text:
            continue
        stale.append(target)
        if not check:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    # A findings file whose case is gone (renamed or deleted fixture) goes with it.
    orphans = [path for path in findings_files() if path not in wanted]
    for path in orphans:
        if not check:
            path.unlink()
    for target in stale:
        print(f"{'stale' if check else 'wrote'} {target.relative_to(ROOT)}")
    for path in orphans:
        print(f"{'orphan' if check else 'removed'} {path.relative_to(ROOT)}")
    return 1 if check and (stale or orphans) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
