"""Whole tasks a forger who reads copies wins, with and without crosses.

    PYTHONPATH=. python bench/bench_cross.py [--per-package N] [--tests-per-task T]

The forger of tests/copies_attack.py is fitted on the planted groups of the
fitting half of the corpus files; on the other half, every run of
`--tests-per-task` tests of a file is one task (copies proposed, chosen and
planted as verify does: tests/copies_harness.task_wins). A task is won when
the forger names the original of every group it plants (for a cross, every
site). Prints one JSON line: tasks, win rate without and with crosses, and
their ratio.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from copies_attack import fit  # noqa: E402
from copies_harness import corpus_files, corpus_of, planted_samples, split, task_wins  # noqa: E402

from taskforge.grade.copies import CopyStyle  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-package", type=int, default=8)
    ap.add_argument("--tests-per-task", type=int, default=2)
    a = ap.parse_args()
    files = corpus_files(a.per_package)
    corpus = corpus_of(files)
    train_files, test_files = split(files)
    t0 = time.monotonic()
    train, _ = planted_samples(train_files, CopyStyle.EXCHANGED, corpus)
    w = fit(train)
    row = {"per_package": a.per_package, "tests_per_task": a.tests_per_task, "fit_groups": len(train)}
    for crossed in (False, True):
        res = task_wins(test_files, corpus, w, crossed, a.tests_per_task)
        key = "crossed" if crossed else "single"
        row[f"{key}_tasks"] = len(res)
        row[f"{key}_won"] = sum(r[0] for r in res)
        row[f"{key}_rate"] = round(sum(r[0] for r in res) / max(1, len(res)), 3)
        row[f"{key}_groups_read"] = sum(r[1] for r in res)
    row["ratio"] = round(row["crossed_rate"] / row["single_rate"], 3) if row["single_rate"] else None
    row["seconds"] = round(time.monotonic() - t0, 1)
    print(json.dumps(row))


if __name__ == "__main__":
    main()
