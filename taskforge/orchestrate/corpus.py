"""`taskforge corpus`: generate over many repositories, with an honest denominator.

Every repository tried is a row of OUT/corpus.json: its tasks, its wall time,
and, when it gave none, one line of cause (the error, or the commonest reason
its candidates were dropped). The summary is the headline figures of issue 25:
the share of repositories that yield a task, the median tasks per repository,
and tasks per core-hour (wall time on every core of the machine, as
bench/bench_corpus.py counts it). `row_of`, `no_task_cause` and `summarize`
are pure; `run_local` is the loop around `pipeline.generate`.
"""
from __future__ import annotations

import os
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from taskforge.errors import TaskforgeError


class CorpusRow(BaseModel):
    """One repository tried."""
    repo: str
    out: str = ""
    tasks: list[str] = Field(default_factory=list)
    resumed_tasks: int = 0              # of them, written by an earlier, interrupted run
    error: str | None = None            # generate failed: its one-line message
    cause: str | None = None            # no task: why, in one line (the error, or the drops)
    cause_kind: str | None = None       # the cause's kind, for counting ("too central", ...)
    seconds: float = 0.0                # wall time of its generate
    baseline_tests: int = 0
    baseline_passing: int = 0
    candidates: int = 0
    tried: int = 0
    node: str | None = None             # the Ray node it ran on


class CorpusReport(BaseModel):
    """OUT/corpus.json."""
    rows: list[CorpusRow]
    repositories: int
    yielding: int                       # repositories with at least one task
    share_yielding: float
    median_tasks: float
    tasks: int
    wall_seconds: float
    cores: int
    tasks_per_core_hour: float          # tasks written by this run, over its wall time on every core
    causes: dict[str, int] = Field(default_factory=dict)   # first word group of each cause


def _category(reason: str) -> str:
    """The kind of a drop reason or error: its text before the first colon or
    parenthesis ("used by other code", "hidden tests still pass without the
    feature"), without what names one repository (a commit, a path or URL after
    "of", numbers), so kinds add up across a corpus."""
    head = re.sub(r"\S+://\S*?(?=:\s|\s|$)", "", reason).split(":", 1)[0].split(" (", 1)[0]
    head = re.split(r" (?:of|from) (?=\S*[/.])", head, maxsplit=1)[0]
    head = re.sub(r"\b[0-9a-f]{7,40}\b", "", head)
    return re.sub(r"\s+", " ", re.sub(r"\d+", "N", head)).strip()


def no_task_cause(report: dict) -> tuple[str, str]:
    """Why a generate that ran gave no task, in one line, and its kind: no
    candidate at all (the commonest reason symbols were dropped), or the
    commonest reason the tried ones were."""
    funnel = {f["name"]: f["count"] for f in report.get("funnel", [])}
    drops = report.get("drops", [])
    cands = funnel.get("candidates", 0)
    pool = [d for d in drops if d.get("stage") != "candidates"] if cands else drops
    if not pool:
        return ("no candidates", "no candidates") if not cands else (
            f"{cands} candidate(s), none written", "none written")
    kinds = Counter(_category(d.get("reason", "")) for d in pool)
    kind, n = kinds.most_common(1)[0]
    example = next(d for d in pool if _category(d.get("reason", "")) == kind)
    head = (f"no candidates of {funnel.get('symbols considered', len(drops))} symbols"
            if not cands else f"{cands} candidate(s), none written")
    line = f"{head}; {n} dropped as \"{kind}\" (e.g. {example.get('candidate')}: {example.get('reason')})"
    return line[:400], kind


def row_of(repo: str, out: str, seconds: float, report: dict | None = None,
           error: str | None = None, node: str | None = None) -> CorpusRow:
    """The row of one repository from its report.json (as a dict) or its error."""
    if report is None:
        error = error or "no report"
        return CorpusRow(repo=repo, out=out, error=error, cause=error, cause_kind=_category(error),
                         seconds=round(seconds, 1), node=node)
    funnel = {f["name"]: f["count"] for f in report.get("funnel", [])}
    tasks = sorted(report.get("tasks") or [])
    cause, kind = (None, None) if tasks else no_task_cause(report)
    return CorpusRow(repo=repo, out=out, tasks=tasks, seconds=round(seconds, 1), node=node,
                     cause=cause, cause_kind=kind,
                     resumed_tasks=min(len(tasks), (report.get("resumed") or {}).get("tasks", 0)),
                     baseline_tests=report.get("baseline_tests", 0),
                     baseline_passing=report.get("baseline_passing", 0),
                     candidates=funnel.get("candidates", 0), tried=funnel.get("tried", 0))


def summarize(rows: list[CorpusRow], cores: int, wall_seconds: float | None = None) -> CorpusReport:
    """The headline figures over every repository tried (failures count)."""
    n = len(rows)
    counts = [len(r.tasks) for r in rows]
    wall = wall_seconds if wall_seconds is not None else sum(r.seconds for r in rows)
    tasks = sum(counts)
    made = tasks - sum(r.resumed_tasks for r in rows)     # the rate is this run's work over its time
    causes = Counter(r.cause_kind or "" for r in rows if not r.tasks)
    return CorpusReport(
        rows=rows, repositories=n, yielding=sum(1 for c in counts if c),
        share_yielding=round(sum(1 for c in counts if c) / n, 3) if n else 0.0,
        median_tasks=float(statistics.median(counts)) if counts else 0.0, tasks=tasks,
        wall_seconds=round(wall, 1), cores=cores,
        tasks_per_core_hour=round(made / (wall * cores / 3600), 2) if wall > 0 else 0.0,
        causes=dict(causes.most_common()))


def corpus_dirs(repos: list[str], out: Path) -> list[tuple[str, Path]]:
    """(repository, OUT/<stable name>) for each; a name seen twice gets -2, -3..."""
    from taskforge.repo.source import stable_name

    seen: dict[str, int] = {}
    dirs = []
    for repo in repos:
        name = stable_name(repo).replace("/", "__")
        seen[name] = seen.get(name, 0) + 1
        dirs.append((repo, out / (name if seen[name] == 1 else f"{name}-{seen[name]}")))
    return dirs


def run_local(names: list[str], out: Path, opts, log: Callable[[str], None] | None = None
              ) -> CorpusReport:
    """Generate from each repository in turn into OUT/<name>/, writing
    OUT/corpus.json after each (an interrupted corpus resumes: each generate
    resumes from its own journal). Any failure, ours included, is that
    repository's row only."""
    import json

    from taskforge.fsutil import atomic_write
    from taskforge.orchestrate.pipeline import generate

    say = log or (lambda s: None)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[CorpusRow] = []
    dirs = corpus_dirs(names, out)
    report = summarize(rows, os.cpu_count() or 1)
    for i, (repo, dest) in enumerate(dirs, 1):
        say(f"[{i}/{len(dirs)}] {repo}")
        t0 = time.monotonic()
        try:
            rep = generate(repo, dest, opts)
            row = row_of(repo, str(dest), time.monotonic() - t0, rep.model_dump(mode="json"))
        except TaskforgeError as exc:
            row = row_of(repo, str(dest), time.monotonic() - t0, error=exc.message)
        except Exception as exc:  # noqa: BLE001 - our bug, but this repository's row only
            msg = f"internal error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            row = row_of(repo, str(dest), time.monotonic() - t0, error=msg[:300])
        rows.append(row)
        report = summarize(rows, os.cpu_count() or 1)
        atomic_write(out / "corpus.json", json.dumps(report.model_dump(mode="json"), indent=1))
    return report


def summary_line(rep: CorpusReport) -> str:
    """The headline figures in one line."""
    share = f"{100 * rep.share_yielding:.0f}%"
    return (f"{rep.repositories} repositories: {rep.yielding} gave tasks ({share}), median "
            f"{rep.median_tasks:g} tasks, {rep.tasks} in all, {rep.wall_seconds / 3600:.2f} h wall on "
            f"{rep.cores} cores: {rep.tasks_per_core_hour:g} tasks per core-hour")
