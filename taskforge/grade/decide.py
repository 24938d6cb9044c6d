"""The grading core: from a run's facts to the reward and its findings, as small
pure functions.

No I/O and no sandbox here. `verify` gathers the facts (the solution applied,
the copies planted, the sandbox's output read by `events.read_run`) and calls
`judge`; everything that turns those facts into a reward is below, so that each
rule is a table test (tests/test_decide.py) and the runs the real sandboxes
produced for every red-team attack and honest case replay through it in the
fast tier (tests/test_grading_replay.py, data from scripts/record_grading_cases.py).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from taskforge.analysis.testindex import test_ref
from taskforge.grade.copies import Plan
from taskforge.grade.defences import Defences
from taskforge.grade.events import Monitor, RunMeta, RunResult
from taskforge.grade.findings import Finding, Policy, Severity, Source, exemptions, finding
from taskforge.grade.findings import FindingKind as K
from taskforge.grade.seals import rows_unreported, unsealed
from taskforge.models import TestCopy

Problem = tuple[K, str]
MAX_MONITOR_FINDINGS = 100   # distinct monitor findings kept; more are one monitor-flood finding
MAX_EXEMPT_FINDINGS = 1000   # distinct exempt ones (the gold's own acts) kept; more are dropped


@dataclass(frozen=True)
class TaskFacts:
    """What the decision reads of a task: its graded ids and its exemptions."""
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...] = ()
    allowed: frozenset[tuple[str, str]] = frozenset()   # (finding kind, file) the gold does too

    @classmethod
    def of(cls, rec) -> "TaskFacts":
        return cls(tuple(rec.FAIL_TO_PASS), tuple(rec.PASS_TO_PASS), exemptions(rec.grading.allowed))

    @property
    def expected(self) -> list[str]:
        return [*self.fail_to_pass, *self.pass_to_pass]


@dataclass
class Judgement:
    """The decision: the reward, why, and the tallies the result reports."""
    reward: float
    findings: list[Finding]
    outcomes: dict[str, str]                       # by the tests' original ids
    f2p_failures: list[str]
    p2p_regressions: list[str]
    copies_planted: int
    copies_matched: int


def split_outcomes(reported: Mapping[str, str], plan: Plan
                   ) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """Reported outcomes under the tests' original ids, and each planted copy's
    outcomes by id suffix. A report under a name nothing was planted as is taken
    for the id it claims (and is then missing from, or extra to, what is expected)."""
    real: dict[str, str] = {}
    planted: dict[str, dict[str, str]] = {name: {} for name in plan.copies}
    for nid, outcome in reported.items():
        m = plan.copy_of(nid)
        if m is not None:
            planted[m[0]][m[1]] = outcome
        else:
            real[plan.original_id(nid)] = outcome
    return real, planted


def forged_ids(reported: Iterable[str], plan: Plan) -> list[Problem]:
    """Reports no planted test could make: a hidden test's own id where this
    run renamed it, or a second id for one original. Such a report would stand
    for the original (split_outcomes takes an unplanted id for the id it
    claims) and could overwrite the failure its renamed run reported, with no
    seal or copy to ask (red team of 2026-12-05: 1 with no implementation)."""
    renamed = set(plan.originals.values())
    owner: dict[str, str] = {}
    out: list[Problem] = []
    for nid in reported:
        if plan.copy_of(nid) is not None:
            continue
        ref = test_ref(nid)
        if ref is not None and ref in renamed:
            out.append((K.FORGED_ID, f"a report under {nid}, which this run renamed"))
            continue
        orig = plan.original_id(nid)
        if owner.setdefault(orig, nid) != nid:
            out.append((K.FORGED_ID, f"two reports stand for {orig}"))
    return out[:5]


def not_passed(ids: Iterable[str], outcomes: Mapping[str, str]) -> list[str]:
    """The ids among `ids` that did not pass (missing ones included), sorted."""
    return sorted({t for t in ids if outcomes.get(t) != "passed"})


def run_findings(problems: Iterable[Problem], timed_out: bool, pol: Policy) -> list[Finding]:
    """What reading the run found (a malformed or repeated event, overflow, a
    workspace grown past its bound), and the time limit."""
    out = [finding(k, Source.GRADER, detail, policy=pol) for k, detail in problems]
    if timed_out:
        out.append(finding(K.TIMEOUT, Source.GRADER, "the test run was killed at the time limit",
                           policy=pol))
    return out


def isolation_findings(meta: RunMeta | None, pol: Policy) -> list[Finding]:
    """The supervisor's own observations: the tests ran as its uid, or left
    processes behind."""
    if meta is None:
        return []
    out = []
    if not meta.separated:
        out.append(finding(K.NOT_SEPARATED, Source.GRADER, "the tests ran as the supervisor's uid",
                           policy=pol))
    if meta.alive_after_exit:
        out.append(finding(K.ESCAPED_PROCESS, Source.GRADER,
                           f"{meta.alive_after_exit} process(es) outlived the run (killed)", policy=pol))
    return out


def monitor_findings(events: Iterable[Monitor], dropped: int, allowed: frozenset[tuple[str, str]],
                     pol: Policy, bounded: bool = True) -> list[Finding]:
    """The monitor's events as findings, one per (kind, site); `bounded`: at most
    MAX_MONITOR_FINDINGS of them and one monitor-flood finding for the rest. The
    monitor reports each act once, so a flood was written on the pipe by the
    code under test, to bloat the result (150,000 events: 28 MB of JSON). An
    act the gold does too in the same file is exempt (`allowed`) and counts
    toward a cap of its own (MAX_EXEMPT_FINDINGS), never toward the flood."""
    out: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    charged = exempt_kept = 0
    for ev in events:
        exempt = (ev.kind, ev.site.rsplit(":", 1)[0]) in allowed
        if bounded:
            if (ev.kind, ev.site) in seen:
                continue
            seen.add((ev.kind, ev.site))
            # The gold's own acts (w3lib's gold: 117 distinct) are no flood: they
            # have a cap of their own, past which they are dropped, not charged.
            if exempt:
                if exempt_kept >= MAX_EXEMPT_FINDINGS:
                    continue
                exempt_kept += 1
            elif charged >= MAX_MONITOR_FINDINGS:
                dropped += 1
                continue
            else:
                charged += 1
        try:
            kind = K(ev.kind)
        except ValueError:
            out.append(finding(K.MALFORMED_EVENT, Source.GRADER,
                               f"unknown monitor kind {ev.kind[:40]!r}", policy=pol))
            continue
        out.append(finding(kind, Source.MONITOR, ev.detail, ev.site, pol, exempt=exempt))
    if dropped:
        kept = len(out) - exempt_kept
        out.append(finding(K.MONITOR_FLOOD, Source.GRADER,
                           f"{kept + dropped} distinct monitor events; the first {kept} kept",
                           policy=pol))
    return out


def exit_problems(*, finished: bool, exit_code: int | None, session_exit: int | None,
                  outcomes: Mapping[str, str], run_outcomes: Mapping[str, str],
                  collect_errors: Mapping[str, str], expected: Iterable[str]) -> list[Problem]:
    """What the process's exit says about the reports. A session that never
    finished, an exit code the session did not report, exit 0 beside failures
    or missing tests, a failing exit with nothing failed: the reports are not the tests'
    own. Expected tests without a result are charged unless their file did not
    collect (that is the solution's ordinary failure). `outcomes` is by the
    tests' original ids; `run_outcomes` is every reported id (copies included)."""
    out: list[Problem] = []
    expected = list(expected)
    missing = [t for t in expected if t not in outcomes]
    uncollected = {k.split("::")[0] for k in collect_errors}
    unexplained = [t for t in missing if t.split("::")[0] not in uncollected]
    failing = any(v in ("failed", "error") for v in run_outcomes.values())
    if not finished:
        out.append((K.EARLY_EXIT, f"the test session did not finish (exit code {exit_code})"))
    elif exit_code != session_exit:
        out.append((K.EXIT_CODE, f"process exited {exit_code}, session reported {session_exit}"))
    elif exit_code == 0 and (missing or failing):
        out.append((K.EXIT_CODE, "exit 0 with tests missing or failing"))
    elif exit_code != 0 and not collect_errors and not failing:
        # 1 (tests failed), 2 (interrupted), 3 (internal error): none of them
        # beside reports that every test passed.
        out.append((K.EXIT_CODE, f"exit {exit_code} although every test passed"))
    if unexplained and finished:
        out.append((K.MISSING_RESULTS, f"{len(unexplained)} expected test(s) produced no result"))
    return out


def profile_diff(want: Mapping[str, str], got: Mapping[str, str]) -> str:
    """How a copy's outcomes differ from the gold's, for people (first three)."""
    keys = sorted(set(want) | set(got))
    diff = [f"{k or '()'}: {got.get(k, 'missing')} (gold {want.get(k, 'none')})"
            for k in keys if want.get(k) != got.get(k)]
    return "; ".join(diff[:3])[:200]


def copy_findings(copies: Mapping[str, TestCopy], planted: Mapping[str, Mapping[str, str]],
                  wrong_anyway: bool, pol: Policy) -> tuple[int, list[Finding]]:
    """(copies that ended exactly as on the gold, findings). Every copy must end
    as it did on the gold: one that passed, or whose results went missing, means
    the reports are not the tests' own. A solution that fails a hidden test
    (`wrong_anyway`) is charged nothing more: the copies say nothing new."""
    matched = 0
    out: list[Finding] = []
    for name, m in copies.items():
        got = planted.get(name, {})
        if got == m.expect:
            matched += 1
            continue
        if wrong_anyway:
            continue
        passed = [s for s, want in m.expect.items() if want == "failed" and got.get(s) == "passed"]
        detail = (f"a must-fail copy of {m.func} passed ({m.site})" if passed else
                  f"a copy of {m.func} did not end as on the gold ({m.site}): {profile_diff(m.expect, got)}")
        out.append(finding(K.COPY_PASSED, Source.GRADER, detail, policy=pol))
    return matched, out


def reward(f2p_failures: list[str], p2p_regressions: list[str], timed_out: bool,
           findings: Iterable[Finding]) -> float:
    """1 only when every graded test passed in time and nothing fatal was found."""
    fatal = any(f.severity is Severity.FATAL for f in findings)
    return 1.0 if not (f2p_failures or p2p_regressions or timed_out or fatal) else 0.0


def judge(task: TaskFacts, run: RunResult, plan: Plan, prior: Iterable[Finding],
          d: Defences) -> Judgement:
    """The reward for one graded run. `prior`: what preparing the tree found
    (restored files, a static scan); `d`: which defences count."""
    pol = d.policy
    reported = run.outcomes
    if d.seals:
        # A test that passed in pytest but not on its seals failed (grade/seals.py).
        bad = unsealed(run.outcomes, run.seals, plan.seals)
        reported = {nid: ("failed" if nid in bad else o) for nid, o in run.outcomes.items()}
    outcomes, planted = split_outcomes(reported, plan)
    found = list(prior) + run_findings(run.problems, run.timed_out, pol)
    if d.isolation:
        found += isolation_findings(run.meta, pol)
        found += [finding(k, Source.GRADER, detail, policy=pol) for k, detail in forged_ids(run.outcomes, plan)]
        if d.seals:
            found += [finding(K.FORGED_ID, Source.GRADER, f"a sealed row of {head} reported under no id of its own",
                              policy=pol) for head in rows_unreported(run.outcomes, plan.seals)[:5]]
    if d.monitor:
        found += monitor_findings(run.monitor, run.monitor_dropped, task.allowed, pol, d.bounds)
    if d.exit_checks and not run.timed_out:
        found += [finding(k, Source.GRADER, detail, policy=pol) for k, detail in exit_problems(
            finished=run.session_finished, exit_code=run.exit_code, session_exit=run.session_exit,
            outcomes=outcomes, run_outcomes=run.outcomes, collect_errors=run.collect_errors,
            expected=task.expected)]
    f2p_failures = not_passed(task.fail_to_pass, outcomes)
    p2p_regressions = not_passed(task.pass_to_pass, outcomes)
    matched, copies = copy_findings(plan.copies, planted, bool(f2p_failures), pol)
    found += copies
    return Judgement(reward=reward(f2p_failures, p2p_regressions, run.timed_out, found),
                     findings=found, outcomes=outcomes, f2p_failures=f2p_failures,
                     p2p_regressions=p2p_regressions, copies_planted=len(plan.copies),
                     copies_matched=matched)
