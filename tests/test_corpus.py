"""`taskforge corpus`: every repository tried is a row, a failure (ours included)
is that repository's only, and the summary gives the headline figures."""
from __future__ import annotations

import json
import subprocess

import pytest

from taskforge.orchestrate.corpus import CorpusRow, no_task_cause, row_of, summarize
from tests.conftest import make_git_repo, run_cli


def report(tasks=(), funnel=None, drops=()) -> dict:
    return {"tasks": list(tasks), "baseline_tests": 10, "baseline_passing": 9,
            "funnel": [{"name": k, "count": v} for k, v in (funnel or {}).items()],
            "drops": [{"candidate": c, "stage": s, "reason": r} for c, s, r in drops]}


@pytest.mark.parametrize("rep, want, kind", [
    (report(funnel={"symbols considered": 3, "candidates": 0},
            drops=[("a.f", "candidates", "used by other code: a (module level)"),
                   ("a.g", "candidates", "used by other code: a.h"),
                   ("a.k", "candidates", "too small: 1 statement(s) of code removed (minimum 3)")]),
     'no candidates of 3 symbols; 2 dropped as "used by other code" (e.g. a.f: used by other code: '
     'a (module level))', "used by other code"),
    # With candidates, what happened to the tried ones is the cause, not the symbols' drops.
    (report(funnel={"symbols considered": 3, "candidates": 2},
            drops=[("a.f", "candidates", "used by other code: x"),
                   ("a.g", "remaining suite green", "remaining suite red: 4 test(s) fail"),
                   ("a.h", "remaining suite green", "remaining suite red: 9 test(s) fail")]),
     '2 candidate(s), none written; 2 dropped as "remaining suite red" (e.g. a.g: remaining suite '
     'red: 4 test(s) fail)', "remaining suite red"),
    (report(funnel={"candidates": 0}), "no candidates", "no candidates"),
])
def test_the_cause_of_no_task_is_its_commonest_drop(rep, want, kind):
    assert no_task_cause(rep) == (want, kind)


@pytest.mark.parametrize("reason, kind", [
    ("cannot check out b392d3af7f9a of /tmp/src/cerberus: error: invalid object", "cannot check out"),
    ("cannot clone https://github.com/a/b.git: fatal: no route", "cannot clone"),
    ("cannot fetch the submodules of /tmp/x/hyperframe: fatal: clone failed", "cannot fetch the submodules"),
    ("too central: 12 of 40 passing tests depend on it (cap 16)", "too central"),
    ("the test suite did not run at baseline (exit 1): x", "the test suite did not run at baseline"),
])
def test_cause_kinds_add_up_across_repositories(reason, kind):
    from taskforge.orchestrate.corpus import _category

    assert _category(reason) == kind


def test_rows_and_the_headline_figures():
    rows = [row_of("r1", "o/r1", 100.0, report(tasks=["t1", "t2", "t3"], funnel={"candidates": 5,
                                                                                "tried": 4})),
            row_of("r2", "o/r2", 50.0, error="the test suite timed out at baseline"),
            row_of("r3", "o/r3", 30.0, report(funnel={"candidates": 0})),
            row_of("r4", "o/r4", 20.0, report(tasks=["t4"]))]
    assert rows[0].candidates == 5 and rows[0].tried == 4 and rows[0].cause is None
    assert rows[1].cause_kind == "the test suite timed out at baseline" and rows[1].tasks == []
    s = summarize(rows, cores=2)
    assert (s.repositories, s.yielding, s.share_yielding, s.tasks) == (4, 2, 0.5, 4)
    assert s.median_tasks == 0.5 and s.wall_seconds == 200.0
    assert s.tasks_per_core_hour == round(4 / (200 * 2 / 3600), 2)
    assert s.causes == {"the test suite timed out at baseline": 1, "no candidates": 1}
    assert summarize([], cores=2).share_yielding == 0.0
    # Tasks an interrupted run wrote before are not this run's work: not in the rate.
    resumed = report(tasks=["t1", "t2"])
    resumed["resumed"] = {"tasks": 2}
    again = summarize([row_of("r1", "o/r1", 10.0, resumed)], cores=1)
    assert again.tasks == 2 and again.tasks_per_core_hour == 0.0
    assert CorpusRow.model_validate_json(rows[0].model_dump_json()) == rows[0]


def _broken_objects_repo(tmp_path):
    """A repository whose HEAD tree names a blob that is not there (a partial
    mirror): cloning works, checking out does not."""
    src = tmp_path / "holes-src"
    src.mkdir()
    (src / "big.json").write_text('{"a": 1}\n')
    repo = make_git_repo(src, tmp_path / "holes")
    blob = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD:big.json"], capture_output=True,
                          text=True, check=True).stdout.strip()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    return repo


def test_one_repository_s_failure_costs_no_other_its_tasks(tmp_path, fixture_repos, base_image):
    """A missing path, a repository whose checkout fails (a GitCommandError escaped
    and ended the whole corpus run at its third repository), then a good one:
    three rows, the last with its task, and the summary counts all three."""
    holes = _broken_objects_repo(tmp_path)
    out = tmp_path / "out"
    res = run_cli("corpus", str(tmp_path / "nowhere"), str(holes), str(fixture_repos["textkit"]),
                  "--out", str(out), "--max-tasks", "1", "--json", timeout=900)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr[-3000:]
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert rows[0]["error"].startswith("no such repository"), rows[0]
    assert rows[1]["error"].startswith("cannot check out"), rows[1]
    assert len(rows[2]["tasks"]) == 1 and rows[2]["error"] is None, rows[2]
    corpus = json.loads((out / "corpus.json").read_text())
    assert (corpus["repositories"], corpus["yielding"], corpus["tasks"]) == (3, 1, 1)
    assert "tasks per core-hour" in res.stderr.splitlines()[-1]
