"""Concurrent agent episodes on fixture tasks: N episodes at once, each running
M commands (an agent's mix: list, read, grep, a Python one-liner, `true`), then
closed; checks every sandbox is gone.

    python bench/bench_episodes.py [--episodes 32] [--commands 20]

Per-command overhead = the round trip of `true` (what taskforge and the engine
add to any command), median and p95 under the full concurrent load; the other
commands' round trips are reported beside it, with episode start and close.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_generate import fixture_repo, pct  # noqa: E402

from taskforge.orchestrate.pipeline import Options, generate  # noqa: E402
from taskforge.training.episodes import EpisodeLimits, Episodes  # noqa: E402

MIX = ["true", "ls -la", "cat pyproject.toml | head -5", "grep -rn def --include=*.py . | head -3",
       "python3 -c 'print(1)'"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=32)
    ap.add_argument("--commands", type=int, default=20)
    args = ap.parse_args()
    import docker

    with tempfile.TemporaryDirectory(prefix="tf-benche-") as tmp:
        work = Path(tmp)
        report = generate(str(fixture_repo("textkit", work)), work / "tasks",
                          Options(max_tasks=4, jobs=2))
        tasks = [work / "tasks" / t for t in sorted(report.tasks)]
        live = Episodes(EpisodeLimits(), max_episodes=args.episodes)
        lock = threading.Lock()
        trips: dict[str, list[float]] = {c: [] for c in MIX}
        starts, closes, failures = [], [], []

        def episode(k: int) -> None:
            t = time.monotonic()
            ep = live.start(tasks[k % len(tasks)])
            with lock:
                starts.append(time.monotonic() - t)
            for i in range(args.commands):
                cmd = MIX[(k + i) % len(MIX)]
                t = time.monotonic()
                r = ep.run(cmd)
                dt = time.monotonic() - t
                with lock:
                    trips[cmd].append(dt)
                    if r.exit_code != 0:
                        failures.append((cmd, r.exit_code, r.output[-200:]))
            t = time.monotonic()
            live.close(ep.id)
            with lock:
                closes.append(time.monotonic() - t)

        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=args.episodes) as ex:
            list(ex.map(episode, range(args.episodes)))
        wall = time.monotonic() - t0
        live.close_all()
        left = docker.from_env().containers.list(all=True,
                                                 filters={"label": "taskforge.role=episode"})
        n = sum(len(v) for v in trips.values())
        print(f"{args.episodes} episodes x {args.commands} commands = {n} commands in {wall:.1f}s "
              f"({n / wall:.1f} commands/s); failures: {len(failures)}; "
              f"sandboxes left: {len(left)}")
        print(f"episode start: median {statistics.median(starts):.2f}s, p95 {pct(starts, .95):.2f}s;"
              f" close: median {statistics.median(closes):.2f}s, p95 {pct(closes, .95):.2f}s")
        for cmd, v in trips.items():
            label = "per-command overhead (`true`)" if cmd == "true" else f"`{cmd}`"
            print(f"  {label}: median {statistics.median(v) * 1000:.0f} ms, "
                  f"p95 {pct(v, .95) * 1000:.0f} ms (n={len(v)})")
        if failures:
            print("first failure:", failures[0])
        sys.exit(1 if failures or left else 0)


if __name__ == "__main__":
    main()
