"""How often a partial solution still scores 1 (issue 24): the gold with one
removed public definition stubbed (`raise NotImplementedError`, or a plausible
constant), graded through `verify` like any answer.

    python bench/bench_partials.py TASK_ROOT... [--workers 2] [--json OUT]

Each TASK_ROOT is a generate output directory (or a task directory). Prints,
per task and in all, how many stubbed golds were graded and how many scored 1
(the target is 0). Generate the tasks first, e.g. from the corpus:

    python -c "from pathlib import Path; from taskforge.repo.sdist import repo_from_sdist; \\
               print(repo_from_sdist('semver', '3.0.4', Path('/tmp/sdists')))"
    python -m taskforge generate /tmp/sdists/semver-3.0.4 -o /tmp/out/semver --max-tasks 5
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from taskforge.grade.verify import Solution, verify_many  # noqa: E402
from taskforge.training.shards import find_tasks  # noqa: E402
from taskforge.validate.adequacy import partial_solutions  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("roots", nargs="+")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    tasks = find_tasks(a.roots)
    items = [(t, name, diff) for t in tasks for name, diff in partial_solutions(t).items()]
    results = verify_many([(t, Solution.from_patch(diff)) for t, _, diff in items],
                          workers=a.workers)
    per: dict[str, dict] = {}
    for (t, name, _), r in zip(items, results):
        row = per.setdefault(Path(t).name, {"graded": 0, "scored_1": [], "errors": 0})
        if r.error is not None:
            row["errors"] += 1
            continue
        row["graded"] += 1
        if r.reward == 1.0:
            row["scored_1"].append(name)
    graded = sum(r["graded"] for r in per.values())
    passing = sum(len(r["scored_1"]) for r in per.values())
    for tid, row in sorted(per.items()):
        print(f"{tid}: {len(row['scored_1'])} of {row['graded']} stubbed golds score 1"
              + (f" ({', '.join(row['scored_1'])})" if row["scored_1"] else "")
              + (f", {row['errors']} infra errors" if row["errors"] else ""))
    tasks_hit = sum(1 for r in per.values() if r["scored_1"])
    print(f"all: {passing} of {graded} stubbed golds score 1 "
          f"({100 * passing / graded if graded else 0:.1f}%); "
          f"{tasks_hit} of {len(tasks)} tasks pay for a partial solution")
    if a.json:
        a.json.write_text(json.dumps({"tasks": len(tasks), "graded": graded, "scored_1": passing,
                                      "tasks_paying": tasks_hit, "per_task": per}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
