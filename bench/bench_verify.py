"""Verify throughput and overhead on fixture tasks.

    python bench/bench_verify.py [--pairs 24] [--workers 1,2,4,8]

Overhead of one verify = its wall time minus the in-sandbox test time (copying,
restoring protected files, container start and removal, grading). Reports the
median and 95th percentile of that overhead, and verifies per minute for each
worker count (the best one is marked).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_generate import fixture_repo, pct  # noqa: E402

from taskforge.pipeline import Options, generate  # noqa: E402
from taskforge.verify import Solution, verify_many  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=24)
    ap.add_argument("--workers", default="1,2,4,8")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tf-benchv-") as tmp:
        work = Path(tmp)
        repo = fixture_repo("textkit", work)
        report = generate(str(repo), work / "tasks", Options(max_tasks=12, jobs=2))
        tasks = [work / "tasks" / t for t in report.tasks]
        pairs = [(tasks[i % len(tasks)], Solution.gold() if i % 2 == 0 else Solution.empty())
                 for i in range(args.pairs)]
        verify_many(pairs[:2], workers=2)            # warm the page cache and the engine
        rows = []
        for w in [int(x) for x in args.workers.split(",")]:
            t0 = time.monotonic()
            results = verify_many(pairs, workers=w, timeout=300)
            wall = time.monotonic() - t0
            bad = [r for r, (_, s) in zip(results, pairs)
                   if r.error or r.reward != (1.0 if s.kind == "gold" else 0.0)]
            over = [r.wall_seconds - r.test_seconds for r in results]
            lat = [r.wall_seconds for r in results]
            rows.append({"workers": w, "verifies_per_min": len(pairs) / wall * 60,
                         "latency_median_s": statistics.median(lat), "latency_p95_s": pct(lat, 0.95),
                         "overhead_median_s": statistics.median(over),
                         "overhead_p95_s": pct(over, 0.95),
                         "test_median_s": statistics.median(r.test_seconds for r in results),
                         "wrong": len(bad)})
    best = max(rows, key=lambda r: r["verifies_per_min"])
    print("workers | verifies/min | latency med | latency p95 | overhead med | overhead p95 | "
          "test med | wrong")
    for r in rows:
        mark = "  <- best" if r is best else ""
        print(f"{r['workers']} | {r['verifies_per_min']:.1f} | {r['latency_median_s']:.2f} | "
              f"{r['latency_p95_s']:.2f} | {r['overhead_median_s']:.2f} | {r['overhead_p95_s']:.2f} | "
              f"{r['test_median_s']:.2f} | {r['wrong']}{mark}")


if __name__ == "__main__":
    main()
