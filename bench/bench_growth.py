"""What the supervisor's workspace-growth bound costs a graded run.

    PYTHONPATH=. python bench/bench_growth.py [--files N] [--runs R]

Runs the real supervisor (taskforge/sandbox/runtime/tfrun.py) on a tree of N
small files and one trivial test, R times with the bound and R times without,
interleaved, on the host (no sandbox: the walk is what is measured). Prints one
JSON line: the median seconds of each and their ratio.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from taskforge.sandbox import RUNTIME


def run(tree: Path, bound: bool) -> float:
    argv = [sys.executable, "-I", "-S", str(RUNTIME / "tfrun.py"), "--timeout", "120"]
    if bound:
        argv += ["--workspace-growth", f"{1 << 30}:20000"]
    t0 = time.monotonic()
    res = subprocess.run([*argv, "--", "-q", "-p", "no:cacheprovider", "test_x.py"], cwd=tree,
                         capture_output=True, text=True, timeout=300)
    seconds = time.monotonic() - t0
    meta = json.loads(res.stdout.strip().splitlines()[-1])
    assert meta["exit_code"] == 0 and not meta["over_limit"], meta
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=9)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp)
        for i in range(a.files):
            d = tree / "pkg" / f"d{i // 200}"
            d.mkdir(parents=True, exist_ok=True)
            (d / f"m{i}.py").write_text(f"X = {i}\n")
        (tree / "test_x.py").write_text("import time\n\ndef test_x():\n    time.sleep(1.5)\n")
        with_bound, without = [], []
        for _ in range(a.runs):
            without.append(run(tree, False))
            with_bound.append(run(tree, True))
    w, wo = statistics.median(with_bound), statistics.median(without)
    print(json.dumps({"files": a.files, "runs": a.runs, "median_s_bound": round(w, 3),
                      "median_s_unbound": round(wo, 3), "ratio": round(w / wo, 3)}))


if __name__ == "__main__":
    main()
