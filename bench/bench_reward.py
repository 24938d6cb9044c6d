"""Reward path figures on fixture tasks: shard time and byte identity, reward
latency through verl's signature, batch throughput, and the HTTP server.

    python bench/bench_reward.py [--answers 24] [--workers 1,2,4]

Answers alternate gold (graded in a sandbox, reward 1) and a wrong diff that
applies (also graded, reward 0); a non-answer is timed separately (no sandbox).
"""
from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_generate import fixture_repo, pct  # noqa: E402

from taskforge.orchestrate.pipeline import Options, generate  # noqa: E402
from taskforge.training import rewards, shards  # noqa: E402

WRONG = ("diff --git a/NOTES.md b/NOTES.md\nnew file mode 100644\n--- /dev/null\n"
         "+++ b/NOTES.md\n@@ -0,0 +1 @@\n+notes\n")


def post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--answers", type=int, default=24)
    ap.add_argument("--workers", default="1,2,4")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tf-benchr-") as tmp:
        work = Path(tmp)
        repo = fixture_repo("textkit", work)
        report = generate(str(repo), work / "tasks", Options(max_tasks=8, jobs=2))
        ids = sorted(report.tasks)
        t0 = time.monotonic()
        m = shards.write_shards([work / "tasks"], work / "s1")
        shard_s = time.monotonic() - t0
        shards.write_shards([work / "tasks"], work / "s2")
        same = all((work / "s1" / f.path).read_bytes() == (work / "s2" / f.path).read_bytes()
                   for f in m.shards)
        t0 = time.monotonic()
        shards.unshard([work / "s1"], work / "rebuilt")
        unshard_s = time.monotonic() - t0
        print(f"shard: {m.total_rows} tasks in {shard_s:.2f}s "
              f"({sum(f.bytes for f in m.shards)} bytes), byte-identical rerun: {same}; "
              f"unshard {unshard_s:.2f}s")

        gold = {i: (work / "tasks" / i / "gold.patch").read_text() for i in ids}
        items = [{"solution_str": gold[ids[k % len(ids)]] if k % 2 == 0 else WRONG,
                  "ground_truth": ids[k % len(ids)]} for k in range(args.answers)]
        want = [1.0 if k % 2 == 0 else 0.0 for k in range(args.answers)]
        tasks = work / "tasks"
        rewards.score(gold[ids[0]], ids[0], tasks=tasks)             # warm
        lat = []
        for it in items[:8]:
            t0 = time.monotonic()
            rewards.reward("taskforge", it["solution_str"], it["ground_truth"], {"tasks": str(tasks)})
            lat.append(time.monotonic() - t0)
        t0 = time.monotonic()
        for _ in range(20):
            rewards.score("I could not do it.", ids[0], tasks=tasks)
        cheap = (time.monotonic() - t0) / 20
        print(f"reward latency (verl signature, one at a time): median {statistics.median(lat):.2f}s, "
              f"p95 {pct(lat, 0.95):.2f}s; non-answer {cheap * 1000:.0f} ms")
        for w in [int(x) for x in args.workers.split(",")]:
            t0 = time.monotonic()
            got = [r.reward for r in rewards.score_many(items, workers=w, tasks=tasks)]
            wall = time.monotonic() - t0
            print(f"score_many workers={w}: {len(items) / wall * 60:.0f} answers/min, "
                  f"wrong={sum(g != x for g, x in zip(got, want))}")

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = subprocess.Popen([sys.executable, "-m", "taskforge", "serve", "--tasks",
                                 str(work / "s1"), "--port", str(port), "--concurrency", "2",
                                 "--cache", str(work / "cache")], cwd=ROOT,
                                stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(150):
                try:
                    urllib.request.urlopen(base + "/health", timeout=2)
                    break
                except OSError:
                    time.sleep(0.2)
            post(base + "/reward", {"instance_id": ids[0], "solution": gold[ids[0]]})   # warm
            t0 = time.monotonic()
            with ThreadPoolExecutor(max_workers=16) as pool:
                got = list(pool.map(lambda it: post(base + "/reward", {
                    "instance_id": it["ground_truth"], "solution": it["solution_str"]})["reward"],
                    items))
            wall = time.monotonic() - t0
            print(f"server concurrency=2, 16 clients: {len(items) / wall * 60:.0f} answers/min, "
                  f"wrong={sum(g != x for g, x in zip(got, want))}")
        finally:
            proc.terminate()
            proc.wait(timeout=120)


if __name__ == "__main__":
    main()
