"""Regenerate the expected outputs of the corpus test (``fixtures/projects/**/<name>.expected.py``).

Run it after changing a rule, then read ``git diff fixtures/projects``: every changed line is a
change in what users get.

    python tests/update_snapshots.py           # rewrite the snapshots
    python tests/update_snapshots.py --check   # exit 1 if any snapshot is out of date
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from test_corpus import corpus_files, snapshot_for  # noqa: E402

from neuron_migrate.migrate.engine import RulePlan, migrate_python  # noqa: E402


def main(argv: list[str]) -> int:
    check = "--check" in argv
    plan = RulePlan.build()
    stale = []
    for path in corpus_files():
        code = migrate_python(path.read_text(encoding="utf-8"), path.name, plan).code
        snapshot = snapshot_for(path)
        if snapshot.exists() and snapshot.read_text(encoding="utf-8") == code:
            continue
        stale.append(snapshot)
        if not check:
            snapshot.parent.mkdir(parents=True, exist_ok=True)
            snapshot.write_text(code, encoding="utf-8")
    for snapshot in stale:
        print(f"{'stale' if check else 'wrote'} {snapshot.relative_to(Path(__file__).resolve().parents[1])}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
