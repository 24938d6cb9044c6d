"""The grader's pure decisions, row by row (taskforge/grade/decide.py): each row
is a run the sandboxes produce, reduced to the facts the rule reads."""
from __future__ import annotations

import pytest

from taskforge.grade import decide
from taskforge.grade.findings import FindingKind as K
from taskforge.grade.findings import exemptions

A, B = "tests/test_a.py::test_a", "tests/test_b.py::test_b"
P, F = "passed", "failed"


@pytest.mark.parametrize("finished,code,session,outcomes,run_outcomes,errors,want", [
    # honest: all pass, exit 0; the copies fail as they must, exit 1; some fail,
    # exit 1; a file that does not collect, exit 1
    (True, 0, 0, {A: P, B: P}, {A: P, B: P}, {}, []),
    (True, 1, 1, {A: P, B: P}, {A: P, B: P, "x::copy": F}, {}, []),
    (True, 1, 1, {A: P, B: F}, {A: P, B: F}, {}, []),
    (True, 1, 1, {A: P}, {A: P}, {"tests/test_b.py": "ImportError"}, []),
    # the session never finished (os._exit in the tests)
    (False, 0, None, {A: P}, {A: P}, {}, [K.EARLY_EXIT]),
    # an exit code the session did not report
    (True, 0, 1, {A: P, B: P}, {A: P, B: P}, {}, [K.EXIT_CODE]),
    # exit 0 although a test failed, or one is missing
    (True, 0, 0, {A: P, B: F}, {A: P, B: F}, {}, [K.EXIT_CODE]),
    (True, 0, 0, {A: P}, {A: P}, {}, [K.EXIT_CODE, K.MISSING_RESULTS]),
    # exit 0 with a failing copy counts as failing too
    (True, 0, 0, {A: P, B: P}, {A: P, B: P, "x::copy": "error"}, {}, [K.EXIT_CODE]),
    # exit 1 although every test passed (reports forged to passed)
    (True, 1, 1, {A: P, B: P}, {A: P, B: P}, {}, [K.EXIT_CODE]),
    # a test with no result, its file collected
    (True, 1, 1, {A: F}, {A: F}, {}, [K.MISSING_RESULTS]),
    # not charged as missing when the session did not finish (that is charged already)
    (False, -9, None, {}, {}, {}, [K.EARLY_EXIT]),
])
def test_exit_problems(finished, code, session, outcomes, run_outcomes, errors, want):
    got = decide.exit_problems(finished=finished, exit_code=code, session_exit=session,
                               outcomes=outcomes, run_outcomes=run_outcomes, collect_errors=errors,
                               expected=[A, B])
    assert [k for k, _ in got] == want, got


@pytest.mark.parametrize("finished,code,session,outcomes,errors,want", [
    # an exit above the session's, or below it
    (True, 1, 0, {A: P, B: P}, {}, [K.EXIT_CODE]),
    (True, 0, 1, {A: P, B: P}, {}, [K.EXIT_CODE]),
    # interrupted (2) or an internal error (3) beside reports that all passed
    (True, 2, 2, {A: P, B: P}, {}, [K.EXIT_CODE]),
    (True, 3, 3, {A: P, B: P}, {}, [K.EXIT_CODE]),
    # a class that did not collect explains its file's missing tests
    (True, 1, 1, {A: P}, {"tests/test_b.py::TestB": "ImportError"}, []),
])
def test_exit_problems_more_rows(finished, code, session, outcomes, errors, want):
    got = decide.exit_problems(finished=finished, exit_code=code, session_exit=session,
                               outcomes=outcomes, run_outcomes=outcomes, collect_errors=errors,
                               expected=[A, B])
    assert [k for k, _ in got] == want, got


# ------------------------------------------------------------- the rest of the core

from taskforge.grade.copies import Plan  # noqa: E402
from taskforge.grade.copies import TestRef as Ref  # noqa: E402
from taskforge.grade.events import Monitor, RunMeta, RunResult  # noqa: E402
from taskforge.grade.findings import Policy, Severity, Source, finding  # noqa: E402
from taskforge.models import TestCopy  # noqa: E402


@pytest.mark.parametrize("outcome,counted", [
    ("passed", False), ("failed", True), ("error", True), ("skipped", True), ("xfailed", True),
    (None, True),
])
def test_only_a_pass_is_a_pass(outcome, counted):
    outcomes = {} if outcome is None else {A: outcome}
    assert decide.not_passed([A, A], outcomes) == ([A] if counted else [])


def test_task_facts_of_a_record():
    from types import SimpleNamespace

    rec = SimpleNamespace(FAIL_TO_PASS=[A], PASS_TO_PASS=[B],
                          grading=SimpleNamespace(allowed=[("process", "pkg/x.py")]))
    facts = decide.TaskFacts.of(rec)
    # A task written before program starts became "unwatched-code" recorded the
    # gold's as "process": they stay exempt in that file.
    assert facts == decide.TaskFacts((A,), (B,), frozenset({("process", "pkg/x.py"),
                                                            ("unwatched-code", "pkg/x.py")}))
    assert facts.expected == [A, B]


@pytest.mark.parametrize("kind,site,fatal", [
    ("unwatched-code", "pkg/x.py:3", False),     # the gold starts a program in that file too
    ("unwatched-code", "pkg/y.py:3", True),      # not in this one
    ("process", "pkg/y.py:3", False),            # a fork keeps the monitor: review only
])
def test_a_program_start_scores_unless_the_gold_does_it_there(kind, site, fatal):
    found = decide.monitor_findings([mon(kind=kind, site=site)], 0,
                                    exemptions([("process", "pkg/x.py")]), Policy.SCORE)
    assert [f.severity is Severity.FATAL for f in found] == [fatal]


def mon(kind="process", site="pkg/x.py:3", detail="d"):
    return Monitor(report_type="Monitor", kind=kind, site=site, detail=detail)


def test_monitor_findings_once_per_site_capped_at_100_with_a_flood_finding():
    # Every act once; repeats are not findings (and never end the reading).
    evs = [mon(site="a.py:1"), mon(site="a.py:1"), mon(site="a.py:2")]
    out = decide.monitor_findings(evs, 0, frozenset(), Policy.SCORE)
    assert [f.site for f in out] == ["a.py:1", "a.py:2"]
    # At most 100 findings are kept (a verify result stays small), then one flood.
    many = [mon(site=f"a.py:{i}") for i in range(150)] + [mon(site="a.py:0")]
    out = decide.monitor_findings(many, 0, frozenset(), Policy.SCORE)
    assert len(out) == 101 and decide.MAX_MONITOR_FINDINGS == 100
    assert out[-1].kind is K.MONITOR_FLOOD and out[-1].severity is Severity.FATAL
    assert out[-1].detail == "150 distinct monitor events; the first 100 kept"
    exact = [mon(site=f"a.py:{i}") for i in range(100)]
    assert len(decide.monitor_findings(exact, 0, frozenset(), Policy.SCORE)) == 100
    # The parser's own drops are counted in.
    out = decide.monitor_findings([mon()], 7, frozenset(), Policy.SCORE)
    assert out[-1].detail == "8 distinct monitor events; the first 1 kept"
    # Unbounded (the naive grader): every event, no flood.
    assert len(decide.monitor_findings(many, 0, frozenset(), Policy.SCORE, bounded=False)) == 151


def test_the_gold_s_own_acts_are_no_flood():
    """w3lib's gold does 117 distinct acts the monitor reports: every task's gold
    scored 0 as a flood. Acts the gold does in that file are exempt and counted
    apart (their own cap, past which they are dropped, not charged); 101 acts
    that are not still flood."""
    allowed = exemptions([("process", "pkg/x.py")])
    gold_like = [mon(site=f"pkg/x.py:{i}") for i in range(150)]
    out = decide.monitor_findings(gold_like, 0, allowed, Policy.SCORE)
    assert len(out) == 150 and not any(f.kind is K.MONITOR_FLOOD for f in out)
    assert not any(f.severity is Severity.FATAL for f in out)
    lots = [mon(site=f"pkg/x.py:{i}") for i in range(decide.MAX_EXEMPT_FINDINGS + 50)]
    assert len(decide.monitor_findings(lots, 0, allowed, Policy.SCORE)) == decide.MAX_EXEMPT_FINDINGS
    mixed = gold_like + [mon(site=f"pkg/y.py:{i}") for i in range(101)]
    out = decide.monitor_findings(mixed, 0, allowed, Policy.SCORE)
    assert out[-1].kind is K.MONITOR_FLOOD and out[-1].severity is Severity.FATAL
    assert out[-1].detail == "101 distinct monitor events; the first 100 kept"


def test_monitor_findings_unknown_kinds_and_exemptions():
    out = decide.monitor_findings([mon(kind="x" * 100), mon(kind="process", site="pkg/x.py:12")],
                                  0, frozenset({("process", "pkg/x.py")}), Policy.SCORE)
    assert [f.kind for f in out] == [K.MALFORMED_EVENT, K.PROCESS]      # the next event is still read
    assert out[0].detail == f"unknown monitor kind {'x' * 40!r}"
    assert out[1].severity is Severity.INFO or out[1].severity is not Severity.FATAL
    plain = decide.monitor_findings([mon(kind="process", site="pkg/x.py:12")], 0, frozenset(), Policy.SCORE)
    assert plain[0].severity is not out[1].severity                     # the exemption made the difference
    assert plain[0].source is Source.MONITOR and plain[0].site == "pkg/x.py:12"


def test_isolation_findings():
    assert decide.isolation_findings(None, Policy.SCORE) == []
    assert decide.isolation_findings(RunMeta(separated=True), Policy.SCORE) == []
    kinds = [f.kind for f in decide.isolation_findings(RunMeta(separated=False, alive_after_exit=2),
                                                        Policy.SCORE)]
    assert kinds == [K.NOT_SEPARATED, K.ESCAPED_PROCESS]


@pytest.mark.parametrize("want,got,text", [
    ({"": F}, {"": P}, "(): passed (gold failed)"),
    ({"[a]": F}, {}, "[a]: missing (gold failed)"),
    ({}, {"[x]": P}, "[x]: passed (gold none)"),
    ({"[a]": F, "[b]": P}, {"[a]": F, "[b]": F}, "[b]: failed (gold passed)"),
    ({f"[{i}]": F for i in range(5)}, {}, "; ".join(f"[{i}]: missing (gold failed)" for i in range(3))),
])
def test_profile_diff(want, got, text):
    assert decide.profile_diff(want, got) == text


def test_profile_diff_is_short():
    assert len(decide.profile_diff({"[" + "x" * 300 + "]": F}, {})) == 200


def copy(expect, func="test_f"):
    return TestCopy(file="tests/test_a.py", func=func, kind="value", site="line 3: 1 -> 2", source="",
                  expect=expect)


def test_copy_findings():
    m = {"test_1": copy({"": F}), "test_2": copy({"[a]": F, "[b]": P}, func="test_g")}
    matched, out = decide.copy_findings(m, {"test_1": {"": F}, "test_2": {"[a]": F, "[b]": P}}, False,
                                       Policy.SCORE)
    assert (matched, out) == (2, [])
    matched, out = decide.copy_findings(m, {"test_1": {"": P}, "test_2": {"[a]": F}}, False, Policy.SCORE)
    assert matched == 0 and [f.kind for f in out] == [K.COPY_PASSED, K.COPY_PASSED]
    assert out[0].detail == "a must-fail copy of test_f passed (line 3: 1 -> 2)"
    assert out[1].detail == "a copy of test_g did not end as on the gold (line 3: 1 -> 2): [b]: missing (gold passed)"
    assert all(f.severity is Severity.FATAL for f in out)
    # A solution wrong anyway is charged nothing more; the tally still counts.
    matched, out = decide.copy_findings(m, {"test_1": {"": F}}, True, Policy.SCORE)
    assert (matched, out) == (1, [])


@pytest.mark.parametrize("f2p,p2p,timed_out,fatal,want", [
    ([], [], False, False, 1.0),
    ([A], [], False, False, 0.0),
    ([], [B], False, False, 0.0),
    ([], [], True, False, 0.0),
    ([], [], False, True, 0.0),
])
def test_reward(f2p, p2p, timed_out, fatal, want):
    found = [finding(K.COPY_PASSED if fatal else K.RESTORED_FILE, Source.GRADER)]
    assert decide.reward(f2p, p2p, timed_out, found) == want


def test_judge_reads_renamed_tests_and_copies():
    """The run reports renamed tests and a copy; the judgement is by the original ids."""
    plan = Plan(originals={"test_9f": Ref("tests/test_a.py", (), "test_a")},
                copies={"test_c1": copy({"": F})})
    run = RunResult(outcomes={"tests/test_a.py::test_9f": P, "tests/test_b.py::test_b": P,
                              "tests/test_a.py::test_c1": F},
                    exit_code=1, session_exit=1, session_finished=True, meta=RunMeta(separated=True))
    task = decide.TaskFacts((A,), (B,))
    from taskforge.grade.defences import Defences

    j = decide.judge(task, run, plan, [], Defences())
    assert (j.reward, j.outcomes, j.copies_planted, j.copies_matched) == (1.0, {A: P, B: P}, 1, 1)
    # The copy passed: forged (and exit 1 with nothing failing says so too).
    run.outcomes["tests/test_a.py::test_c1"] = P
    j = decide.judge(task, run, plan, [], Defences())
    assert j.reward == 0.0 and [f.kind for f in j.findings] == [K.EXIT_CODE, K.COPY_PASSED]
    # A report of the copy's name under another file is not the copy's.
    run.outcomes = {"tests/test_a.py::test_9f": P, "tests/test_b.py::test_b": P,
                    "tests/test_x.py::test_c1": F}
    j = decide.judge(task, run, plan, [], Defences())
    assert j.reward == 0.0 and j.copies_matched == 0 and K.COPY_PASSED in [f.kind for f in j.findings]
    # A timed-out run: 0, and the exit is not read.
    run.outcomes["tests/test_a.py::test_c1"] = F
    run.timed_out = True
    j = decide.judge(task, run, plan, [], Defences())
    assert j.reward == 0.0 and [f.kind for f in j.findings] == [K.TIMEOUT]


def test_reports_no_planted_test_could_make_are_forged():
    """A renamed hidden test's own id, or two ids for one original: the red
    team of 2026-12-05 overwrote a renamed test's failure that way."""
    from taskforge.grade.decide import forged_ids

    plan = Plan(originals={"test_9f": Ref("tests/test_a.py", (), "test_a")})
    honest = ["tests/test_a.py::test_9f", "tests/test_b.py::test_b"]
    assert forged_ids(honest, plan) == []
    assert [k for k, _ in forged_ids([*honest, "tests/test_a.py::test_a"], plan)] == [K.FORGED_ID]
    assert forged_ids(["tests/test_a.py::test_9f[1]", "tests/test_a.py::test_9f[2]"], plan) == []
    assert forged_ids(["tests/test_a.py::test_a"], Plan()) == [], "not renamed: its own id is the report's"
