"""Time `generate` and `verify` on the bundled fixtures (and optionally real
libraries from the package index) and report ratios, not just seconds: these
machines are noisy, and the test runs are the budget.

    python bench/bench_generate.py                   # fixtures
    python bench/bench_generate.py --real            # + cachetools, inflection sdists
    python bench/bench_generate.py --json out.json
    python bench/bench_generate.py --only parse_amount from_roman   # these features only

Per repository: wall time of generate (warm image cache), time inside test runs
(the bare pytest runs, as timed in the sandbox), their ratio (taskforge's own
overhead on top), tasks per minute, and verify latency (gold) with its overhead.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from taskforge.grade.verify import Solution, verify  # noqa: E402
from taskforge.orchestrate.pipeline import Options, generate  # noqa: E402

REAL = [("cachetools", "5.3.3"), ("inflection", "0.5.1")]


def fixture_repo(name: str, dest: Path) -> Path:
    repo = dest / name
    shutil.copytree(ROOT / "fixtures" / "repos" / name, repo)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b",
                                                  "commit", "-q", "-m", "fixture"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    return repo


def bench_repos(work: Path, real: bool) -> list[tuple[str, Path]]:
    """The fixtures as git repos, and with `real` the real libraries' sdists."""
    repos = [(n, fixture_repo(n, work)) for n in ("textkit", "geomlib", "ledger")]
    if real:
        from taskforge.repo.sdist import repo_from_sdist

        repos += [(f"{n}-{v}", repo_from_sdist(n, v, work / "sdists")) for n, v in REAL]
    return repos


def pct(values, q):
    values = sorted(values)
    if not values:
        return 0.0
    k = min(len(values) - 1, max(0, round(q * (len(values) - 1))))
    return values[k]


def bench_repo(label: str, repo: Path, work: Path, jobs: int, max_tasks: int | None,
               verify_n: int, only: tuple[str, ...] = ()) -> dict | None:
    # Warm the image cache first: image builds are a one-off per repo and commit.
    generate(str(repo), work / f"{label}-warm", Options(max_tasks=1, jobs=1, only=only))
    out = work / f"{label}-out"
    t0 = time.monotonic()
    report = generate(str(repo), out, Options(max_tasks=max_tasks, jobs=jobs, only=only))
    if not report.tasks:
        return None
    wall = time.monotonic() - t0
    test_all = report.timings["test_seconds_all"]
    necessary = report.timings["test_seconds_necessary"]
    lat, over = [], []
    for tid in report.tasks[:verify_n]:
        res = verify(out / tid, Solution.gold(), timeout=300)
        assert res.reward == 1.0, (tid, res)
        lat.append(res.wall_seconds)
        over.append(res.wall_seconds - res.test_seconds)
    return {
        "repo": label, "tasks": len(report.tasks), "candidates": report.funnel[1].count,
        "funnel": {s.name: s.count for s in report.funnel},
        "generate_wall_s": round(wall, 2), "test_time_s": round(test_all, 2),
        "necessary_test_time_s": round(necessary, 2),
        "wall_over_test": round(wall / test_all, 3) if test_all else None,
        "wall_over_necessary": round(wall / necessary, 3) if necessary else None,
        "tasks_per_min": round(len(report.tasks) / wall * 60, 1),
        "verify_n": len(lat), "verify_median_s": round(statistics.median(lat), 3) if lat else None,
        "verify_p95_s": round(pct(lat, 0.95), 3) if lat else None,
        "verify_overhead_median_s": round(statistics.median(over), 3) if over else None,
        "jobs": jobs,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--real", action="store_true", help="also real libraries from the index")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--max-tasks", type=int, default=None)
    ap.add_argument("--verify", type=int, default=10, help="gold verifies per repo")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    ap.add_argument("--only", nargs="*", default=[], help="only these features (generate --only); "
                    "a repository with none is left out")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="tf-bench-") as tmp:
        work = Path(tmp)
        for label, repo in bench_repos(work, args.real):
            row = bench_repo(label, repo, work, args.jobs, args.max_tasks, args.verify, tuple(args.only))
            if row is None:
                continue
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    hdr = ["repo", "tasks", "generate_wall_s", "test_time_s", "wall_over_test",
           "wall_over_necessary", "tasks_per_min", "verify_median_s", "verify_p95_s",
           "verify_overhead_median_s"]
    print(" | ".join(hdr))
    for r in rows:
        print(" | ".join(str(r[h]) for h in hdr))
    tot_wall = sum(r["generate_wall_s"] for r in rows)
    tot_test = sum(r["test_time_s"] for r in rows)
    tot_nec = sum(r["necessary_test_time_s"] for r in rows)
    tot_tasks = sum(r["tasks"] for r in rows)
    print(f"TOTAL | {tot_tasks} | {tot_wall:.1f} | {tot_test:.1f} | {tot_wall / tot_test:.3f} | "
          f"{tot_wall / tot_nec:.3f} | {tot_tasks / tot_wall * 60:.1f} | | |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
