"""What the probe batches (validate/variants.py, issue 25 item 4) save: each
repository generated twice, probes batched and one session per probe, and per
gate the test runs it paid for and their time.

    python bench/bench_probes.py                                # fixtures + 3 sdists
    python bench/bench_probes.py --only voluptuous --max-tasks 6
    python bench/bench_probes.py --json probes.json

Per repository and mode: wall time, tasks, and per gate (stage of the run that
asked for it) the sessions and their in-sandbox seconds; the adequacy records
of the two modes must be equal (same stand-ins, partials and mutants killed);
ratio = wall / (bare suite x (2 + tasks)), the issue's figure, with the bare
suite as timed in the sandbox at baseline (the smaller of the two modes' runs). Machines are noisy: compare the
ratios of the two modes, not seconds across runs.
"""
from __future__ import annotations

import argparse
import collections
import json
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_generate import fixture_repo  # noqa: E402

from taskforge.grade import testrun  # noqa: E402
from taskforge.orchestrate.pipeline import Options, generate  # noqa: E402

SDISTS = [("voluptuous", "0.15.2"), ("tomlkit", "0.13.2"), ("marshmallow", "3.23.1")]
FIXTURES = ["textkit", "geomlib"]
GATES = {"check": "adequacy", "run_variants": "adequacy", "calibrate": "calibration",
         "remaining_green": "remaining suite", "run_hidden": "hidden on stripped",
         "_pytest": "final check (verify)", "run_baseline": "baseline"}


class Runs:
    """Every PytestRunner.run of this process, by the gate that asked."""

    def __init__(self):
        self.by_gate: dict[str, list[float]] = collections.defaultdict(list)
        self._orig = testrun.PytestRunner.run
        runs = self

        def run(self, *a, **k):
            r = runs._orig(self, *a, **k)
            names = [f.name for f in traceback.extract_stack()[:-1]]
            gate = next((GATES[n] for n in reversed(names) if n in GATES), "other")
            runs.by_gate[gate].append(r.test_seconds)
            return r

        testrun.PytestRunner.run = run

    def take(self) -> dict:
        out = {g: {"sessions": len(v), "seconds": round(sum(v), 2)} for g, v in self.by_gate.items()}
        self.by_gate.clear()
        return out


def adequacy_records(out: Path) -> dict:
    recs = {}
    for tj in sorted(out.glob("*/task.json")):
        d = json.loads(tj.read_text())
        recs[d["instance_id"]] = {k: v for k, v in d["adequacy"].items() if k != "batched"}
    return recs


def one(repo: Path, out: Path, batch: bool, max_tasks: int, runs: Runs) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    start = time.monotonic()
    rep = generate(str(repo), out, Options(max_tasks=max_tasks, batch_probes=batch))
    wall = time.monotonic() - start
    state = json.loads(next((out / ".state").glob("baseline-*.json")).read_text())
    bare = float(state.get("bare_seconds") or 0.0)
    tasks = len(rep.tasks)
    batched = sum(json.loads(t.read_text())["adequacy"].get("batched", 0) for t in out.glob("*/task.json"))
    return {"wall": round(wall, 1), "tasks": tasks, "bare_suite": round(bare, 2),
            "ratio": round(wall / (bare * (2 + tasks)), 2) if bare else None,
            "gates": runs.take(), "probes_batched": batched}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", help="repositories (fixture or sdist names)")
    ap.add_argument("--max-tasks", type=int, default=6)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    from taskforge.repo.sdist import repo_from_sdist

    work = Path(tempfile.mkdtemp(prefix="bench-probes-"))
    runs = Runs()
    rows = []
    try:
        repos = [(n, lambda n=n: fixture_repo(n, work)) for n in FIXTURES]
        repos += [(n, lambda n=n, v=v: repo_from_sdist(n, v, work / "sdists")) for n, v in SDISTS]
        for name, make in repos:
            if args.only and name not in args.only:
                continue
            repo = make()
            row = {"repo": name}
            generate(str(repo), work / "warm", Options(max_tasks=1))      # the image, built once
            runs.take()
            for batch in (False, True):
                row["batched" if batch else "sessions"] = one(repo, work / f"{name}-{batch}", batch,
                                                             args.max_tasks, runs)
            row["same_adequacy"] = (adequacy_records(work / f"{name}-False")
                                    == adequacy_records(work / f"{name}-True"))
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print("| repo | tasks | wall before | wall after | ratio before | ratio after | adequacy sessions "
          "before → after | adequacy s before → after | same records |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        a, b = r["sessions"], r["batched"]
        ga, gb = a["gates"].get("adequacy", {}), b["gates"].get("adequacy", {})
        # One bare suite time for both modes (the smaller): it varies run to run.
        bare = min(a["bare_suite"], b["bare_suite"]) or 1.0
        ra, rb = (round(x["wall"] / (bare * (2 + x["tasks"])), 2) for x in (a, b))
        print(f"| {r['repo']} | {b['tasks']} | {a['wall']} | {b['wall']} | {ra} | {rb} | "
              f"{ga.get('sessions', 0)} → {gb.get('sessions', 0)} | {ga.get('seconds', 0)} → "
              f"{gb.get('seconds', 0)} | {r['same_adequacy']} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
