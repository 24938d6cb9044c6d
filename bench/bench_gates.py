"""Where generate's time goes on given repositories: per gate (the stage of
the run that asked for a pytest session) the sessions and their in-sandbox
seconds, with the issue's ratio wall / (bare suite x (2 + tasks written)).

    python bench/bench_gates.py /tmp/sdr/asteval --max-tasks 40
    python bench/bench_gates.py REPO REPO --json gates.json

Each repository is generated once in this process, on a warm image (a first
run with --max-tasks 1 builds it and is not counted), with the default
options (cases on, every gate on, two jobs). The bare suite is the baseline's
own plain run as timed in the sandbox. Gate seconds add up over the two jobs,
so they can exceed the wall time. Compare ratios, not seconds across runs.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_probes import Runs  # noqa: E402
from bench_probes import one as probes_one  # noqa: E402

from taskforge.orchestrate.pipeline import Options, generate  # noqa: E402


def one(repo: Path, out: Path, max_tasks: int, runs: Runs) -> dict:
    """bench_probes.one with the probes batched (the default), plus the
    probes stopped at the hang limit and tasks per core-hour."""
    runs.take()
    row = probes_one(repo, out, True, max_tasks, runs)
    hung = sum(json.loads(t.read_text())["adequacy"].get("hung", 0) for t in out.glob("*/task.json"))
    wall = row["wall"]
    return {"repo": repo.name, **row, "probes_hung": hung,
            "tasks_per_core_hour": round(row["tasks"] / (wall * 2 / 3600), 1) if wall else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repos", nargs="+", type=Path, help="git repositories (paths or URLs' clones)")
    ap.add_argument("--max-tasks", type=int, default=40)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-gates-"))
    runs = Runs()
    rows = []
    try:
        for repo in args.repos:
            generate(str(repo), work / "warm", Options(max_tasks=1))      # the image, built once
            row = one(repo, work / repo.name, args.max_tasks, runs)
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    gates = sorted({g for r in rows for g in r["gates"]})
    print()
    print("| repo | tasks | wall s | bare suite s | ratio | probes hung | "
          + " | ".join(f"{g} (sessions, s)" for g in gates) + " |")
    print("|---|---|---|---|---|---|" + "---|" * len(gates))
    for r in rows:
        cells = [f"{r['gates'].get(g, {}).get('sessions', 0)}, {r['gates'].get(g, {}).get('seconds', 0)}"
                 for g in gates]
        print(f"| {r['repo']} | {r['tasks']} | {r['wall']} | {r['bare_suite']} | {r['ratio']} | "
              f"{r['probes_hung']} | " + " | ".join(cells) + " |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
