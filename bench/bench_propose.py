"""What the proposal stage offers per repository, under several definitions
limits: candidates, their tiers, and why the others were dropped (issue 25 item
3: yield per repository; issue 24 item 5: larger vertical slices).

    PYTHONPATH=. python bench/bench_propose.py REPO [REPO ...] [--defs 16 40 64] [--shares 0.4 0.6]
        [--branches] [--out DIR]

Each repository goes through generate's own clone, environment and baseline
stages once (cached in DIR/<name>/, so a second run costs no test run), then
`propose` runs once per limit on the same index and coverage: no candidate is
validated. Prints one JSON line per (repository, limit); with --branches, one
without and one with the arms of if/elif/else chains (Removal.BRANCH).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def measure(repo: str, out: Path, limits: list[int], shares: list[float],
            branch_modes: tuple[bool, ...] = (False,)) -> list[dict]:
    from taskforge.orchestrate.corpus import _category
    from taskforge.orchestrate.pipeline import GenerateRun, Options
    from taskforge.propose.features import propose

    run = GenerateRun(repo, out, Options(jobs=1))
    run._claim()
    rows = []
    try:
        run.fetch()
        run.read()
        run.environment_and_baseline()
        run.propose_features()            # sets index, tests, cov and the run's own checks
        from taskforge.analysis.dynamic import hopeless_check

        hopeless, late = hopeless_check(run.src.path, run.layout, run.image_scan.result(),
                                        run.plan.python)
        for limit, share, br in [(li, sh, b) for li in limits for sh in shares for b in branch_modes]:
            t = time.monotonic()
            p = propose(run.index, run.cov, run.passing, run.all_ids, run.tests, max_share=share,
                        hopeless=hopeless, late=late, max_symbols=limit, branches=br)
            tiers = Counter(c.difficulty.tier.value for c in p.candidates)
            hard = [c.difficulty for c in p.candidates if c.difficulty.tier.value == "hard"]
            rows.append({
                "repo": Path(repo).name, "max_defs": limit, "max_share": share, "branches": br,
                "symbols": p.considered, "candidates": len(p.candidates),
                "branch_candidates": sum(c.removal.value == "branch" for c in p.candidates),
                "tiers": dict(tiers), "predicted_red": p.predicted,
                "hard_mean_lines": round(sum(d.removed_lines for d in hard) / len(hard), 1) if hard else 0,
                "hard_mean_files": round(sum(d.files for d in hard) / len(hard), 2) if hard else 0,
                "drops": dict(Counter(_category(r) for _, r in p.drops).most_common(6)),
                "seconds": round(time.monotonic() - t, 2)})
    finally:
        run.background.shutdown(wait=True, cancel_futures=True)
        from taskforge.fsutil import rmtree
        from taskforge.orchestrate.pipeline import _close

        _close(run.workers, run.remote)
        rmtree(run.scratch)
        run.state.unlock()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repos", nargs="+")
    ap.add_argument("--defs", type=int, nargs="+", default=[16, 40])
    ap.add_argument("--shares", type=float, nargs="+", default=[0.4],
                    help="--max-share values to propose under (the suite share one feature may hide).")
    ap.add_argument("--branches", action="store_true", help="Propose with and without if/elif/else arms.")
    ap.add_argument("--out", default=None, help="Where the baselines are kept (default: a temporary directory).")
    a = ap.parse_args()
    base = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="bench-propose-"))
    for repo in a.repos:
        try:
            for row in measure(repo, base / Path(repo).name, a.defs, a.shares,
                               (False, True) if a.branches else (False,)):
                print(json.dumps(row), flush=True)
        except Exception as exc:  # noqa: BLE001 - one repository's failure is its line only
            print(json.dumps({"repo": Path(repo).name, "error": str(exc).splitlines()[0][:200]}), flush=True)


if __name__ == "__main__":
    main()
