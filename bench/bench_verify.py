"""Verify throughput and overhead on fixture tasks.

    python bench/bench_verify.py [--pairs 24] [--workers 1,2,4]
                                 [--sandboxes cold,warm,bwrap,bwrap-warm]

Overhead of one verify = its wall time minus the in-sandbox test time (copying,
restoring protected files, container start and removal, grading). Reports the
median and 95th percentile of that overhead, and verifies per minute, for each
sandbox mode (cold: a container started per verify; warm: started ahead by a
WarmPool, one per worker; bwrap: the daemonless backend, its environment built
from the tasks' recipes by `taskforge env prepare`, which needs
$TASKFORGE_ROOTFS_BASE, a sandbox per verify; bwrap-warm: the same from a
WarmPool, the supervisor parked ahead, verify_many's default there) and worker
count (the best one is marked).
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

from taskforge.grade.testrun import runner_mount  # noqa: E402
from taskforge.grade.verify import Solution, verify_many  # noqa: E402
from taskforge.orchestrate.pipeline import Options, generate  # noqa: E402
from taskforge.package.store import load_task  # noqa: E402


def bare_exec(image: str, modes: list[str], n: int = 12) -> list[tuple[str, float, float]]:
    """A sandbox's own cost: start, `python -I -S -c pass` as the supervisor
    runs, destroy (warm: the start is done ahead and not counted)."""
    from taskforge.sandbox import SandboxSpec, Standby, open_sandbox
    from taskforge.sandbox.warm import WarmPool

    out = []
    probe = ["python", "-I", "-S", "-c", "pass"]
    for mode in modes:
        # bwrap-warm: the probe parked ahead as the supervisor is, read stdin to its end
        standby = Standby(command=["python", "-I", "-S", "-c",
                                   "import os\nwhile os.read(0, 65536): pass"],
                          serves=probe) if mode == "bwrap-warm" else None
        spec = SandboxSpec(image=image, mounts=[runner_mount()], standby=standby)
        backend = "bwrap" if mode.startswith("bwrap") else "docker"
        pool = WarmPool(per_shape=1, backend=backend) if mode.endswith("warm") else None
        times = []
        for _ in range(n):
            if pool is not None:
                pool.prefill(spec)
            t0 = time.monotonic()
            if pool is not None:
                lease = pool.take(spec)
                lease.sandbox.exec(probe, timeout=30, user="0:0")
                pool.give_back(lease)
            else:
                with open_sandbox(spec, backend) as sb:
                    sb.exec(probe, timeout=30, user="0:0")
            times.append(time.monotonic() - t0)
        if pool is not None:
            pool.close()
        out.append((mode, statistics.median(times), pct(times, 0.95)))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=24)
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--sandboxes", default="cold,warm,bwrap,bwrap-warm")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tf-benchv-") as tmp:
        work = Path(tmp)
        repo = fixture_repo("textkit", work)
        report = generate(str(repo), work / "tasks", Options(max_tasks=12, jobs=2))
        tasks = [work / "tasks" / t for t in report.tasks]
        pairs = [(tasks[i % len(tasks)], Solution.gold() if i % 2 == 0 else Solution.empty())
                 for i in range(args.pairs)]
        verify_many(pairs[:2], workers=2)            # warm the page cache and the engine
        modes = args.sandboxes.split(",")
        if any(m.startswith("bwrap") for m in modes):
            from taskforge.sandbox.bwrap import rootfs

            t0 = time.monotonic()
            rootfs.prepare_task(load_task(tasks[0]).environment_request(), log=lambda s: None)
            print(f"bwrap environment prepared in {time.monotonic() - t0:.1f}s (no Docker)")
            verify_many(pairs[:2], workers=2, backend="bwrap")
        bare = bare_exec(load_task(tasks[0]).record.image_name, modes)
        rows = []
        for mode, w in [(m, int(x)) for m in modes for x in args.workers.split(",")]:
            t0 = time.monotonic()
            results = verify_many(pairs, workers=w, timeout=300,
                                  warm=w if mode.endswith("warm") else 0,
                                  backend="bwrap" if mode.startswith("bwrap") else "docker")
            wall = time.monotonic() - t0
            bad = [r for r, (_, s) in zip(results, pairs)
                   if r.error or r.reward != (1.0 if s.kind == "gold" else 0.0)]
            over = [r.wall_seconds - r.test_seconds for r in results]
            lat = [r.wall_seconds for r in results]
            rows.append({"sandbox": mode, "workers": w, "verifies_per_min": len(pairs) / wall * 60,
                         "latency_median_s": statistics.median(lat), "latency_p95_s": pct(lat, 0.95),
                         "overhead_median_s": statistics.median(over),
                         "overhead_p95_s": pct(over, 0.95),
                         "test_median_s": statistics.median(r.test_seconds for r in results),
                         "wrong": len(bad)})
    print("sandbox | bare exec med (s) | p95   (start + python -I -S -c pass + destroy)")
    for mode, med, p95 in bare:
        print(f"{mode} | {med:.3f} | {p95:.3f}")
    best = max(rows, key=lambda r: r["verifies_per_min"])
    print("sandbox | workers | verifies/min | latency med | latency p95 | overhead med | overhead p95 | "
          "test med | wrong")
    for r in rows:
        mark = "  <- best" if r is best else ""
        print(f"{r['sandbox']} | {r['workers']} | {r['verifies_per_min']:.1f} | {r['latency_median_s']:.2f} | "
              f"{r['latency_p95_s']:.2f} | {r['overhead_median_s']:.3f} | {r['overhead_p95_s']:.3f} | "
              f"{r['test_median_s']:.2f} | {r['wrong']}{mark}")


if __name__ == "__main__":
    main()
