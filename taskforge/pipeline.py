"""`generate`: from a repository to validated, packaged tasks.

Stages (docs/architecture.md): fetch -> layout -> environment image ->
baseline x2 with per-test coverage -> symbol index -> propose -> validate in
parallel warm sandboxes -> package. Every drop is recorded with its reason.
"""
from __future__ import annotations

import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from taskforge import __version__
from taskforge.audit import LeakError, image_leaks, leak_checker
from taskforge.coverage_map import CoverageMap
from taskforge.envdetect import detect
from taskforge.errors import InfraError, TaskforgeError, UserError
from taskforge.features import propose
from taskforge.fsutil import atomic_write, rmtree
from taskforge.images import ensure_base_image, ensure_env_image
from taskforge.layout import scan
from taskforge.models import (DropReason, FeatureInfo, FunnelStage, GenerateReport,
                              RemovedSymbol, TaskRecord, TaskSizes, TaskTimings)
from taskforge.package import protected_files, task_id, write_task
from taskforge.source import fetch
from taskforge.statement import problem_statement
from taskforge.symbols import index_repo
from taskforge.task_store import load_task
from taskforge.testindex import group_ids, index_tests
from taskforge.validate import Context, Verdict, Worker, validate

STAGES = ["candidates", "removed cleanly", "remaining suite green", "hidden tests fail",
          "gold passes", "leak-free", "tasks"]


@dataclass
class Options:
    ref: str | None = None
    max_tasks: int | None = None
    jobs: int = max(1, min(os.cpu_count() or 1, 4))
    timeout: float = 600.0
    max_share: float = 0.25
    max_red: float = 0.05
    kinds: tuple[str, ...] = ("function", "method", "class", "module")


class Progress:
    """Progress callbacks; the CLI plugs rich in, the library default is silent."""

    def stage(self, text: str) -> None: ...

    def start(self, total: int) -> None: ...

    def advance(self, text: str) -> None: ...

    def done(self) -> None: ...


def generate(repo: str, out: str | Path, options: Options | None = None,
             progress: Progress | None = None, log: Callable[[str], None] | None = None
             ) -> GenerateReport:
    opts = options or Options()
    prog = progress or Progress()
    say = log or (lambda s: None)
    out_dir = Path(out).resolve()
    timings: dict[str, float] = {}
    t_all = time.monotonic()
    if out_dir.is_dir():  # leftovers of an interrupted run: never half a task
        for stale in out_dir.glob(".tmp-*"):
            rmtree(stale)
    scratch = Path(tempfile.mkdtemp(prefix="taskforge-"))
    workers: list[Worker] = []
    try:
        prog.stage("cloning")
        t = time.monotonic()
        src = fetch(repo, scratch / "src", ref=opts.ref)
        timings["clone"] = time.monotonic() - t

        prog.stage("reading the repository")
        layout = scan(src.path)
        if not layout.source_files and not layout.test_files:
            raise UserError(f"not a Python repository: no Python files in {repo}")
        if not layout.test_files:
            raise UserError(f"no tests found in {repo} (looked for test_*.py, *_test.py, tests/)")
        if not layout.source_files:
            raise UserError(f"no package code found in {repo} outside its tests")
        index = index_repo(src.path, layout)          # raises on syntax errors
        tests = index_tests(src.path, layout.test_files)
        plan = detect(src.path, layout)

        prog.stage("building the environment image")
        t = time.monotonic()
        base = ensure_base_image(log=say)
        image, build_secs = ensure_env_image(src.path, src.name, src.commit, base, plan.script(),
                                             log=say)
        timings["image"] = time.monotonic() - t

        prog.stage("baseline runs")
        t = time.monotonic()
        workers.append(Worker(src.path, image, scratch, 0))
        baseline = run_baseline(workers[0], layout, opts)
        timings["baseline"] = time.monotonic() - t
        passing, flaky, failing, all_ids, cov, base_test_secs = baseline

        prog.stage("proposing features")
        t = time.monotonic()
        by_key = group_ids(all_ids)
        proposal = propose(index, cov, passing, all_ids, tests, max_share=opts.max_share)
        proposal.candidates = [c for c in proposal.candidates if c.kind in opts.kinds]
        timings["propose"] = time.monotonic() - t
        drops = [DropReason(candidate=n, stage="candidates", reason=r) for n, r in proposal.drops]
        cap = max(1, int(opts.max_share * len(passing)))
        ctx = Context(src=src.path, index=index, tests=tests, passing=passing, all_ids=all_ids,
                      by_key=by_key, cap=cap, timeout=opts.timeout, layout=layout)

        prog.stage("validating candidates")
        t = time.monotonic()
        for n in range(1, opts.jobs):
            workers.append(Worker(src.path, image, scratch, n))
        def finished(cand) -> bool:
            tdir = out_dir / task_id(src.name, src.commit, cand.name, cand.kind)
            try:
                return load_task(tdir).record.source_commit == src.commit
            except TaskforgeError:
                return False

        verdicts = validate_all(workers, ctx, proposal.candidates, opts.max_tasks, prog, finished)
        timings["validate"] = time.monotonic() - t

        prog.stage("packaging tasks")
        t = time.monotonic()
        protected = protected_files(src.path)
        stage_counts = {s: 0 for s in STAGES}
        tasks: list[str] = []
        image_hits = image_leaks(src.path, [v.candidate.symbols for v in verdicts
                                            if v.ok and not v.resumed], image)
        necessary = base_test_secs
        for v in verdicts:
            for s in STAGES[: STAGES.index(v.stage) + 1]:   # leak-free/tasks counted below
                stage_counts[s] += 1
            if not v.ok:
                drops.append(DropReason(candidate=v.candidate.name, stage=v.stage, reason=v.reason))
                continue
            if opts.max_tasks is not None and len(tasks) >= opts.max_tasks:
                continue
            out_dir.mkdir(parents=True, exist_ok=True)
            tid = task_id(src.name, src.commit, v.candidate.name, v.candidate.kind)
            if v.resumed:
                tasks.append(tid)
                stage_counts["leak-free"] += 1
                stage_counts["tasks"] += 1
                continue
            record_fn = _record_builder(tid, src, image, v, ctx, len(flaky), protected)
            check = leak_checker(src.path, v.candidate.symbols, sorted(v.hidden & ctx.passing),
                                 image_hits)
            try:
                write_task(out_dir, tid, src.path, v.source_changes, v.test_changes, protected,
                           record_fn, leak_check=check)
            except LeakError as exc:
                drops.append(DropReason(candidate=v.candidate.name, stage="gold passes",
                                        reason=f"leaks the removed code: {exc}"))
                continue
            tasks.append(tid)
            stage_counts["leak-free"] += 1
            stage_counts["tasks"] += 1
            necessary += v.seconds.get("remaining_suite", 0) + v.seconds.get("hidden_on_stripped", 0)
        timings["package"] = time.monotonic() - t
        timings["total"] = time.monotonic() - t_all
        timings["test_seconds_all"] = base_test_secs + sum(v.test_seconds_total for v in verdicts)
        timings["test_seconds_necessary"] = necessary
        timings["image_build"] = build_secs
        report = GenerateReport(
            repo=src.repo, source_commit=src.commit, image_name=image,
            baseline_tests=len(all_ids), baseline_passing=len(passing),
            baseline_failing=len(failing), flaky_excluded=len(flaky),
            funnel=[FunnelStage(name="symbols considered", count=proposal.considered)]
            + [FunnelStage(name=s, count=(len(proposal.candidates) if s == "candidates"
                                          else stage_counts[s])) for s in STAGES],
            drops=drops, tasks=tasks, timings={k: round(v, 3) for k, v in timings.items()},
            jobs=opts.jobs)
        out_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(out_dir / "report.json", report.model_dump_json(indent=2) + "\n")
        return report
    finally:
        for w in workers:
            w.close()
        rmtree(scratch)


def run_baseline(worker: Worker, layout, opts: Options):
    """Two full runs: one with per-test coverage, one without; flaky = outcome differs."""
    cov_sources = layout.source_roots() or [""]
    r1 = worker.runner.run([], timeout=opts.timeout, cov_sources=cov_sources)
    _check_baseline(r1)
    r2 = worker.runner.run([], timeout=opts.timeout)
    _check_baseline(r2)
    ids = set(r1.outcomes) | set(r2.outcomes)
    flaky = {i for i in ids if r1.outcomes.get(i) != r2.outcomes.get(i)}
    passing = {i for i in ids - flaky if r1.outcomes.get(i) == "passed"}
    failing = {i for i in ids - flaky if r1.outcomes.get(i) in ("failed", "error")}
    considered = len(passing) + len(failing)
    if considered and len(failing) > opts.max_red * considered:
        ex = sorted(failing)[0]
        raise UserError(f"the test suite is red at baseline: {len(failing)} of {considered} tests "
                        f"fail (e.g. {ex})")
    if not passing:
        raise UserError("no test passes at baseline")
    if r1.coverage_file is None:
        raise InfraError("the baseline run wrote no coverage data")
    cov = CoverageMap.load(r1.coverage_file)
    return passing, flaky, failing, ids, cov, r1.test_seconds + r2.test_seconds


def _check_baseline(r) -> None:
    if r.timed_out:
        raise UserError("the test suite timed out at baseline")
    if r.collect_errors:
        nid, msg = sorted(r.collect_errors.items())[0]
        raise UserError(f"the test suite does not collect at baseline: {nid or '<session>'}: {msg}")
    if r.exit_code == 5 or (not r.outcomes and r.exit_code in (0, 5)):
        raise UserError("no tests were collected at baseline")
    if not r.outcomes:
        tail = [ln for ln in r.log.splitlines() if ln.strip()][-1:] or ["no output"]
        raise UserError(f"the test suite did not run at baseline (exit {r.exit_code}): {tail[0][:200]}")


def validate_all(workers: list[Worker], ctx: Context, candidates, max_tasks, prog,
                 finished=lambda c: False) -> list[Verdict]:
    """Validate in candidate order across workers; stop once max_tasks are found
    among a completed prefix (so the chosen set does not depend on timing)."""
    results: dict[int, Verdict] = {}
    prog.start(len(candidates))
    free = list(workers)
    next_i = 0

    def enough() -> bool:
        if max_tasks is None:
            return False
        ok = 0
        for i in range(len(candidates)):
            if i not in results:
                return False
            ok += results[i].ok
            if ok >= max_tasks:
                return True
        return False

    with ThreadPoolExecutor(max_workers=len(workers)) as pool:
        running = {}
        while True:
            while free and next_i < len(candidates) and not enough():
                if finished(candidates[next_i]):   # resume: a task already on disk
                    results[next_i] = Verdict(candidate=candidates[next_i], ok=True,
                                              stage="gold passes", resumed=True)
                    prog.advance(f"{candidates[next_i].name}: already written")
                    next_i += 1
                    continue
                w = free.pop()
                running[pool.submit(validate, w, ctx, candidates[next_i])] = (next_i, w)
                next_i += 1
            if not running:
                break
            fut = next(as_completed(running))
            i, w = running.pop(fut)
            results[i] = fut.result()
            free.append(w)
            v = results[i]
            prog.advance(f"{v.candidate.name}: {'ok' if v.ok else v.reason[:60]}")
    prog.done()
    ordered = [results[i] for i in sorted(results)]
    if max_tasks is not None:
        ok, cut = 0, len(ordered)
        for j, v in enumerate(ordered):
            ok += v.ok
            if ok >= max_tasks:
                cut = j + 1
                break
        ordered = ordered[:cut]
    return ordered


def _record_builder(tid, src, image, v: Verdict, ctx: Context, n_flaky: int,
                    protected: list[str]):
    cand = v.candidate
    f2p = sorted(v.hidden & ctx.passing)
    p2p = sorted(ctx.passing - v.hidden)
    exports = sorted(f"{m}.{n}" for (m, n) in v.exported      # re-exports of removed names
                     if f"{m}.{n}" != cand.root.qualname and not n.startswith("_"))
    touched = sorted(v.source_changes)
    statement = problem_statement(src.name, cand.root, cand.symbols, exports, touched, len(f2p))
    symbols = [RemovedSymbol(qualname=s.qualname, kind=s.kind, path=s.path, start_line=s.start,
                             end_line=s.end, signature=s.signature, public=s.public)
               for s in cand.symbols]
    hidden_files = sorted(v.test_changes)

    def build(base_commit, patch, test_patch, workspace_files):
        return TaskRecord(
            instance_id=tid, repo=src.repo, base_commit=base_commit, source_commit=src.commit,
            environment_setup_commit=src.commit, created_at=src.commit_date,
            patch=patch, test_patch=test_patch, problem_statement=statement,
            FAIL_TO_PASS=f2p, PASS_TO_PASS=p2p, image_name=image,
            feature=FeatureInfo(kind=cand.kind, name=cand.name, symbols=symbols,
                                touched_files=touched),
            hidden_test_files=hidden_files,
            protected_files=protected,
            test_command=["python", "-m", "pytest", "-p", "no:cacheprovider"],
            flaky_excluded=n_flaky,
            sizes=TaskSizes(removed_lines=v.removed_lines, removed_symbols=len(cand.symbols),
                            hidden_tests=len(f2p), remaining_tests=len(p2p),
                            workspace_files=workspace_files),
            timings=TaskTimings(rounds=v.rounds, **{k: round(x, 3) for k, x in v.seconds.items()}),
            taskforge_version=__version__)
    return build
