"""Audit every task generated from the fixtures (and, with --real, the real
libraries) and time it: the first audit of an image pays its export, the rest
hit the cache.

    python bench/bench_audit.py [--real]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_generate import bench_repos  # noqa: E402

from taskforge.leaks.audit import audit, cache_root  # noqa: E402
from taskforge.orchestrate.pipeline import Options, generate  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--real", action="store_true")
    args = ap.parse_args()
    shutil.rmtree(cache_root(), ignore_errors=True)          # measure the cold first audit too
    print("repo | tasks | clean | first audit s | median s | max s")
    with tempfile.TemporaryDirectory(prefix="tf-bencha-") as tmp:
        work = Path(tmp)
        for label, repo in bench_repos(work, args.real):
            out = work / f"{label}-tasks"
            report = generate(str(repo), out, Options(jobs=2))
            times, clean = [], 0
            for tid in report.tasks:
                rep = audit(out / tid)
                times.append(rep.seconds)
                clean += not rep.findings
                for f in rep.findings:
                    print("  finding:", tid, f.line(), file=sys.stderr)
            rest = times[1:] or times
            print(f"{label} | {len(times)} | {clean} | {times[0]:.2f} | "
                  f"{statistics.median(rest):.2f} | {max(rest):.2f}")


if __name__ == "__main__":
    main()
