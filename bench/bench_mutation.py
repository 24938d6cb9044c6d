"""Mutation score of the modules a reward depends on, measured with cosmic-ray.

    python3 -m venv /tmp/crvenv && /tmp/crvenv/bin/pip install cosmic-ray==8.7.0
    python3 bench/bench_mutation.py --cosmic-ray /tmp/crvenv/bin/cosmic-ray [--only decide] [--json]
        [--workers N] [--tests "tests/test_x.py ..."]

Each module is mutated (operators, comparisons, constants, boolean and
exception changes: cosmic-ray's full set) in a copy of the repository's
tracked files, never in this tree, and each mutant is run against the fast
tests that pin that module. A mutant is killed when a test fails, survives
when every test passes, and is incompetent when it cannot even be imported;
one inside an annotation (never evaluated) is equivalent: counted apart, and
not even tested (marked skipped in the session before the run).
The score is killed / (killed + survived). The surviving mutants are listed
(module, line, operator), as the to-do list of tests to add. Not a CI gate:
a measurement (issue 27).

Every mutant costs a fresh interpreter and pytest (about a second before the
first test), so the pinned tests are the quick ones that exercise the module
(tests/test_difficulty.py, tests/test_curriculum_units.py: no sandbox, no
server, no subprocess beyond git), and mutants are tested --workers at once
(default one per core), each worker a cosmic-ray http-worker in its own copy
of the tree. `--tests` measures another selection (say, before new tests).
On 2 shared cores: difficulty 416 mutants in about 7 minutes, curriculum 610
(396 more in annotations, skipped) in about 13.

cosmic-ray lives in a venv of its own (its dependencies are not taskforge's);
the tests run with this interpreter.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAST = "-m 'not docker' -x -q -p no:cacheprovider -p no:randomly"
MODULES = {
    "decide": ("taskforge/grade/decide.py",
               "tests/test_decide.py tests/test_grading_replay.py"),
    "curriculum": ("taskforge/training/curriculum.py", "tests/test_curriculum_units.py"),
    "difficulty": ("taskforge/propose/difficulty.py", "tests/test_difficulty.py"),
}


def tracked_copy(dest: Path) -> None:
    """The repository as a clone has it (tracked files only), at `dest`."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True,
                           text=True).stdout.split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def annotation_spans(path: Path) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where the module's annotations are. With `from __future__ import
    annotations` they are never evaluated, so a mutant inside one (`int | None`
    made `int & None`) is equivalent: counted apart, not as a survivor."""
    import ast

    tree = ast.parse(path.read_text())
    if not any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
               and any(a.name == "annotations" for a in n.names) for n in tree.body):
        return []
    spans = []
    for node in ast.walk(tree):
        anns = []
        if isinstance(node, ast.arg) and node.annotation is not None:
            anns.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            anns.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            anns.append(node.annotation)
        spans += [((a.lineno, a.col_offset), (a.end_lineno or a.lineno, a.end_col_offset or 0)) for a in anns]
    return spans


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def http_workers(cr: str, trees: list[Path]):
    """One cosmic-ray http-worker per tree (each mutates its own copy of the
    files, so mutants never meet); yields their URLs once they all listen."""
    procs, urls = [], []
    try:
        for tree in trees:
            port = free_port()
            procs.append(subprocess.Popen([cr, "http-worker", "--port", str(port)], cwd=tree,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            urls.append(f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 60
        for proc, url in zip(procs, urls):
            port = int(url.rsplit(":", 1)[1])
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"cosmic-ray http-worker exited ({proc.returncode})")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"cosmic-ray http-worker on {url} never listened") from None
                    time.sleep(0.2)
        yield urls
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


SKIP_ANNOTATIONS = """
import json, sys
from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import WorkerOutcome, WorkResult

spans = [(tuple(a), tuple(b)) for a, b in json.loads(sys.argv[2])]
with use_db(sys.argv[1], WorkDB.Mode.open) as db:
    ids = [w.job_id for w in db.pending_work_items
           if all(any(a <= tuple(m.start_pos) < b for a, b in spans) for m in w.mutations)]
    db.set_multiple_results(ids, WorkResult(worker_outcome=WorkerOutcome.SKIPPED,
                                            output="inside an annotation"))
"""


def measure(cr: str, name: str, work: Path, timeout: float, workers: int = 1,
            tests: str | None = None) -> dict:
    module, pinned = MODULES[name]
    tests = tests or pinned
    cfg = work / f"{name}.toml"
    trees = [work / "tree"] + [work / f"tree{i}" for i in range(1, workers)]
    for tree in trees:
        if not tree.exists():
            tracked_copy(tree)
    session = work / f"{name}.sqlite"
    spans = annotation_spans(trees[0] / module)
    t0 = time.monotonic()
    with (http_workers(cr, trees) if workers > 1 else contextlib.nullcontext([])) as urls:
        cfg.write_text(
            "[cosmic-ray]\n"
            f'module-path = "{module}"\n'
            f"timeout = {timeout}\n"
            "excluded-modules = []\n"
            # No plugin autoload: the pinned tests need none, and loading every
            # installed plugin is most of a run's start-up (3x the time here).
            f'test-command = "env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest {FAST} {tests}"\n'
            + ("\n[cosmic-ray.distributor]\nname = \"http\"\n"
               f"\n[cosmic-ray.distributor.http]\nworker-urls = {json.dumps(urls)}\n" if urls
               else "\n[cosmic-ray.distributor]\nname = \"local\"\n"))
        subprocess.run([cr, "init", str(cfg), str(session)], cwd=trees[0], check=True,
                       capture_output=True)
        # A mutant inside an annotation is never evaluated: marked skipped
        # before the run rather than tested (in curriculum, 40% of the mutants).
        subprocess.run([str(Path(cr).parent / "python"), "-c", SKIP_ANNOTATIONS, str(session),
                        json.dumps(spans)], check=True, capture_output=True)
        subprocess.run([cr, "exec", str(cfg), str(session)], cwd=trees[0], check=True,
                       capture_output=True)
    dump = subprocess.run([cr, "dump", str(session)], cwd=trees[0], check=True, capture_output=True,
                          text=True).stdout
    counts = {"killed": 0, "survived": 0, "incompetent": 0, "equivalent": 0}
    survivors = []
    for line in dump.splitlines():
        item, result = json.loads(line)
        outcome = (result or {}).get("test_outcome")
        muts = item["mutations"]
        if (result or {}).get("worker_outcome") == "skipped" or (outcome == "survived" and all(
                any(a <= tuple(m["start_pos"]) < b for a, b in spans) for m in muts)):
            outcome = "equivalent"
        if outcome in counts:
            counts[outcome] += 1
        if outcome == "survived":
            for m in muts:
                survivors.append(f"{m['module_path']}:{m['start_pos'][0]} {m['operator_name']}"
                                 f" #{m['occurrence']}")
    scored = counts["killed"] + counts["survived"]
    return {"module": module, "tests": tests, **counts,
            "score": round(counts["killed"] / scored, 3) if scored else None,
            "seconds": round(time.monotonic() - t0, 1), "survivors": survivors}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cosmic-ray", default=shutil.which("cosmic-ray") or "cosmic-ray",
                    help="the cosmic-ray executable (default: on PATH)")
    ap.add_argument("--only", action="append", choices=sorted(MODULES), help="measure these modules only")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per mutant's test run")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="mutants tested at once, each in its own copy of the tree (default: one per core)")
    ap.add_argument("--tests", help="test files to run instead of the ones MODULES pins (to compare "
                    "two selections, e.g. before and after new tests)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    if not shutil.which(args.cosmic_ray):
        print(f"error: cosmic-ray not found ({args.cosmic_ray}); see this script's --help", file=sys.stderr)
        return 2
    # Stopped (kill PID): the workers and the copies go too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results = []
    with tempfile.TemporaryDirectory(prefix="tf-mutation-") as tmp:
        work = Path(tmp)
        for name in args.only or sorted(MODULES):
            r = measure(args.cosmic_ray, name, work, args.timeout, max(1, args.workers), args.tests)
            results.append(r)
            if not args.json:
                print(f"{r['module']}: {r['killed']} killed, {r['survived']} survived, "
                      f"{r['incompetent']} incompetent, {r['equivalent']} in annotations: "
                      f"score {r['score']} ({r['seconds']} s; tests: {r['tests']})")
                for s in r["survivors"]:
                    print(f"  survived: {s}")
    if args.json:
        print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
