"""Run `taskforge generate` over a corpus of real libraries (bench/corpus.toml)
with no per-repository configuration, and report per repository and in total:
environment built, baseline green, flaky tests excluded, candidates, candidates
tried (validated, up to the --max-tasks prefix), tasks, yield (tasks / tried),
wall time, necessary test time, overhead ratio and peak memory.

    python bench/bench_corpus.py                      # whole corpus, warm runs
    python bench/bench_corpus.py --only cachetools toolz --max-tasks 5
    python bench/bench_corpus.py --out bench-results/  # corpus.md + corpus.json

Each repository is an sdist from the package index turned into a git repo
(taskforge.repo.sdist). generate runs as its own process (`python -m taskforge`),
so wall time includes everything taskforge does and peak memory is that
process's own (ru_maxrss). A run that had to build the environment image is
repeated, so every figure is on a warm image cache.

necessary = the bare test runs the task invariants need (two baseline runs,
and one run of the remaining suite and one of the hidden tests per written
task); overhead ratio = wall / necessary, with the default --jobs.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def run_generate(repo: Path, out: Path, max_tasks: int | None, timeout: float) -> dict:
    """One generate as a child process: its report, wall time, peak RSS, exit code."""
    import tempfile
    import threading

    if out.exists():
        shutil.rmtree(out)
    cmd = [sys.executable, "-m", "taskforge", "generate", str(repo), "--out", str(out),
           "--json", "-q"]
    if max_tasks:
        cmd += ["--max-tasks", str(max_tasks)]
    with tempfile.TemporaryFile() as so, tempfile.TemporaryFile() as se:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=so, stderr=se, cwd=ROOT)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        # wait4 gives this child's own rusage: ru_maxrss is its peak RSS (KiB on Linux).
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - t0
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        so.seek(0)
        se.seek(0)
        stdout, stderr = so.read(), se.read()
    report = None
    try:
        report = json.loads(stdout.decode() or "null")
    except ValueError:
        pass
    err = stderr.decode(errors="replace").strip().splitlines()
    return {"report": report, "wall": wall, "rc": proc.returncode,
            "error": err[-1] if err and proc.returncode != 0 else "",
            "peak_mb": usage.ru_maxrss / 1024}


def row_for(name: str, res: dict) -> dict:
    rep = res["report"] or {}
    funnel = {f["name"]: f["count"] for f in rep.get("funnel", [])}
    t = rep.get("timings", {})
    necessary = t.get("test_seconds_necessary", 0.0)
    return {
        "repo": name,
        "env": bool(rep) or "install" not in res["error"],
        "green": bool(rep),
        "tests": rep.get("baseline_tests", 0),
        "flaky": rep.get("flaky_excluded", 0),
        "failing_excluded": rep.get("baseline_failing", 0),
        "considered": funnel.get("symbols considered", 0),
        "candidates": funnel.get("candidates", 0),
        "tried": funnel.get("tried", funnel.get("removed cleanly", 0)),   # validated
        "tasks": len(rep.get("tasks", [])),
        "task_ids": sorted(rep.get("tasks", [])),     # for before/after comparisons
        "tiers": rep.get("difficulty", {}),
        "kinds": rep.get("kinds", {}),
        "large": rep.get("large_tasks", 0),
        "wall": round(res["wall"], 2),
        "necessary": round(necessary, 2),
        "test_all": round(t.get("test_seconds_all", 0.0), 2),
        "ratio": round(res["wall"] / necessary, 3) if necessary else None,
        "adequacy": round(t.get("test_seconds_adequacy", 0.0), 2),
        "peak_mb": res.get("peak_mb"),
        "error": res["error"] if not rep else "",
        # Issue 25 item 5: tasks per core-hour (the run's wall time on every core
        # of this machine; a warm run unless --no-warm-rerun) and its split.
        "cores": os.cpu_count() or 1,
        "tasks_per_core_hour": (round(len(rep.get("tasks", [])) / (res["wall"] * (os.cpu_count() or 1) / 3600), 1)
                                if res["wall"] else None),
        "split": {k: round(t.get(k, 0.0), 1) for k in ("image", "baseline", "propose", "validate", "package")}
                 | {"adequacy_test_s": round(t.get("test_seconds_adequacy", 0.0), 1)},
    }


def table(rows: list[dict], jobs: int, max_tasks) -> str:
    head = ("| repo | env built | baseline green | tests | flaky excl. | candidates | tried | tasks | "
            "yield | wall s | necessary s | overhead ratio | peak MB | error |")
    out = [head, "|" + "---|" * 14]
    for r in rows:
        yld = f"{r['tasks'] / r['tried']:.0%}" if r["tried"] else "-"
        ratio = f"{r['ratio']:.2f}" if r["ratio"] else "-"
        peak = f"{r['peak_mb']:.0f}" if r["peak_mb"] else "-"
        out.append(f"| {r['repo']} | {'yes' if r['env'] else 'no'} | {'yes' if r['green'] else 'no'} "
                   f"| {r['tests']} | {r['flaky']} | {r['candidates']} | {r['tried']} | {r['tasks']} | {yld} "
                   f"| {r['wall']:.1f} | {r['necessary']:.1f} | {ratio} | {peak} "
                   f"| {r['error'][:90]} |")
    with_tasks = sum(1 for r in rows if r["tasks"])
    wall = sum(r["wall"] for r in rows if r["green"])
    nec = sum(r["necessary"] for r in rows if r["green"])
    cands = sum(r["candidates"] for r in rows)
    tried = sum(r["tried"] for r in rows)
    tasks = sum(r["tasks"] for r in rows)
    peaks = [r["peak_mb"] for r in rows if r["peak_mb"]]
    out.append(f"| **total** | {sum(r['env'] for r in rows)}/{len(rows)} "
               f"| {sum(r['green'] for r in rows)}/{len(rows)} | {sum(r['tests'] for r in rows)} "
               f"| {sum(r['flaky'] for r in rows)} | {cands} | {tried} | {tasks} "
               f"| {tasks / tried if tried else 0:.0%} | {wall:.1f} | {nec:.1f} | {wall / nec if nec else 0:.2f} "
               f"| {max(peaks) if peaks else 0:.0f} | |")
    cores = rows[0].get("cores", 1) if rows else 1
    all_wall = sum(r["wall"] for r in rows)
    out.append("")
    out.append(f"Tasks per core-hour: {tasks / (all_wall * cores / 3600) if all_wall else 0:.1f} "
               f"({tasks} tasks, {all_wall:.0f} s wall on {cores} cores, every repository tried "
               f"counted). Per repository: "
               + ", ".join(f"{r['repo']} {r.get('tasks_per_core_hour') or 0:.0f}" for r in rows) + ".")
    split = {k: sum((r.get("split") or {}).get(k, 0.0) for r in rows)
             for k in ("image", "baseline", "propose", "validate", "package", "adequacy_test_s")}
    out.append("Time split (s, all repositories): " + ", ".join(f"{k} {v:.0f}" for k, v in split.items())
               + " (adequacy_test_s: in-sandbox seconds of the stand-in, partial and mutant probes,"
                 " inside validate).")
    out.append(f"Repositories with tasks: {with_tasks} of {len(rows)} "
               f"({with_tasks / len(rows):.0%}); tasks: {tasks}; "
               f"wall / necessary test time over the green repositories: "
               f"{wall / nec if nec else 0:.2f} (jobs={jobs}, max tasks per repo: {max_tasks or 'all'}).")
    return "\n".join(out)


def difficulty_table(rows: list[dict], max_tasks) -> str:
    """Tasks per repository by tier and kind, and the issue-11 targets."""
    import statistics

    out = ["| repo | symbols considered | tasks | easy | medium | hard | large (40+ lines or 2+ files) "
           "| kinds |", "|" + "---|" * 8]
    for r in rows:
        t = r.get("tiers") or {}
        kinds = ", ".join(f"{k} {n}" for k, n in sorted((r.get("kinds") or {}).items()))
        out.append(f"| {r['repo']} | {r.get('considered', 0)} | {r['tasks']} | {t.get('easy', 0)} "
                   f"| {t.get('medium', 0)} | {t.get('hard', 0)} | {r.get('large', 0)} | {kinds} |")
    green = [r for r in rows if r["green"]]
    tasks = sum(r["tasks"] for r in green)
    large = sum(r.get("large", 0) for r in green)
    tiers = {k: sum((r.get("tiers") or {}).get(k, 0) for r in green) for k in ("easy", "medium", "hard")}
    med = statistics.median([r["tasks"] for r in green]) if green else 0
    zero_big = [r["repo"] for r in green if r["tasks"] == 0 and r.get("considered", 0) >= 20]
    nec = sum(r["necessary"] for r in green)
    adq = sum(r.get("adequacy", 0.0) for r in green)
    wall = sum(r["wall"] for r in green)
    out += ["", f"Median tasks per repository: {med} (asked for {max_tasks or 'all'}); "
                f"tiers: easy {tiers['easy']}, medium {tiers['medium']}, hard {tiers['hard']}; "
                f"large tasks: {large} of {tasks} ({large / tasks if tasks else 0:.0%}); "
                f"repositories with 20+ symbols considered and no task: "
                f"{', '.join(zero_big) or 'none'}. Wall / necessary test time: "
                f"{wall / nec if nec else 0:.2f}; counting the stand-in and gold-mutant runs "
                f"of the tasks written as necessary too: "
                f"{wall / (nec + adq) if nec + adq else 0:.2f}."]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=str(ROOT / "bench" / "corpus.toml"))
    ap.add_argument("--only", nargs="*", help="Only these corpus names.")
    ap.add_argument("--max-tasks", type=int, default=None,
                    help="Per repository (default: the corpus file's max_tasks).")
    ap.add_argument("--work", default=str(Path.home() / ".cache" / "taskforge" / "corpus"),
                    help="Where sdists become git repos (kept between runs).")
    ap.add_argument("--out", default=None, help="Write corpus.md and corpus.json here.")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--no-warm-rerun", action="store_true",
                    help="Keep a run that built its image (wall time then includes the build).")
    args = ap.parse_args()

    from taskforge.orchestrate.pipeline import Options
    from taskforge.repo.sdist import repo_from_sdist

    corpus = tomllib.loads(Path(args.corpus).read_text())
    max_tasks = args.max_tasks or corpus.get("max_tasks")
    entries = [e for e in corpus["repo"] if not args.only or e["name"] in args.only]
    work = Path(args.work)
    scratch = work / "out"
    rows = []
    for e in entries:
        name = f"{e['name']}-{e['version']}"
        try:
            repo = repo_from_sdist(e["name"], e["version"], work / "repos")
        except Exception as exc:   # the index is the only network here: report, go on
            rows.append(row_for(name, {"report": None, "wall": 0.0, "rc": 3, "peak_mb": 0.0,
                                       "error": f"fetch failed: {exc}"}))
            continue
        res = run_generate(repo, scratch / name, max_tasks, args.timeout)
        built = ((res["report"] or {}).get("timings") or {}).get("image_build", 0) > 0
        if built and not args.no_warm_rerun:   # cold: the image was built; measure a warm one
            print(f"{name}: environment image built ({res['wall']:.0f}s); rerunning warm",
                  file=sys.stderr)
            res = run_generate(repo, scratch / name, max_tasks, args.timeout)
        row = row_for(name, res)
        rows.append(row)
        print(f"{name}: {row['tasks']} tasks, wall {row['wall']:.1f}s, necessary "
              f"{row['necessary']:.1f}s, ratio {row['ratio']}, {row['error']}", file=sys.stderr)
    md = table(rows, Options().jobs, max_tasks) + "\n\n" + difficulty_table(rows, max_tasks)
    print(md)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "corpus.md").write_text(md + "\n")
        (out / "corpus.json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
