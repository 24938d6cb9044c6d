"""The supervisor's output and the report events, parsed against a schema.

The supervisor's JSON line (its own observations: exit code, time, overflow)
comes from a process the code under test cannot reach. The report events inside
it come from the pytest process and are claims. In strict mode every event must
fit its schema and the order of a pytest session: one SessionStart, for each
test setup, call and teardown once each (subtest reports inside the call, a
`rerun` starting over), one SessionFinish, nothing after. Anything else is a
finding that scores 0, never an exception. The lenient mode is the naive
grader's: bad lines skipped, the last event per phase wins.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from taskforge.grade.findings import FindingKind as K
from taskforge.grade.seals import MAX_RECORDS as SEALS_KEPT
from taskforge.sandbox.base import ExecResult

MAX_EVENTS = 200_000
MAX_LINE = 256 * 1024          # one honest event is a few KiB (longrepr is cut to 600 chars)
# Monitor events kept per run in strict mode, distinct by (kind, site): the
# monitor itself reports each pair once (and at most 5,000), so more is a
# flood written on the pipe; the rest are only counted (grade caps the findings).
MONITOR_KEEP = 1000


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SessionStart(_Event):
    report_type: Literal["SessionStart"]
    pid: int


class CollectReport(_Event):
    report_type: Literal["CollectReport"]
    nodeid: str
    outcome: Literal["failed"]
    longrepr: str = ""


class TestReport(_Event):
    report_type: Literal["TestReport"]
    nodeid: str
    when: Literal["setup", "call", "teardown"]
    outcome: Literal["passed", "failed", "skipped", "rerun"]
    duration: float = 0.0
    wasxfail: bool = False
    subtest: bool = False
    longrepr: str = ""


class Monitor(_Event):
    report_type: Literal["Monitor"]
    kind: str
    site: str = ""
    detail: str = ""


class Seal(_Event):
    """A sealed equality's actual value (taskforge/grade/seals.py), sent while a test runs."""
    report_type: Literal["Seal"]
    token: str
    value: str | None = None


class SessionFinish(_Event):
    report_type: Literal["SessionFinish"]
    exitstatus: int


EVENTS = {c.__name__: c for c in (SessionStart, CollectReport, TestReport, Monitor, Seal, SessionFinish)}


class RunMeta(BaseModel):
    """The supervisor's own line (taskforge/sandbox/runtime/tfrun.py)."""
    exit_code: int | None = None
    seconds: float = 0.0
    timed_out: bool = False
    output_bytes: int = 0
    results_bytes: int = 0
    overflow: bool = False
    over_limit: str = ""            # the workspace grew past the sandbox's bound
    separated: bool = False
    naive: bool = False
    alive_after_exit: int = 0
    log: str = ""
    results: str = ""


@dataclass
class Parsed:
    outcomes: dict[str, str] = field(default_factory=dict)      # nodeid -> outcome
    durations: dict[str, float] = field(default_factory=dict)
    collect_errors: dict[str, str] = field(default_factory=dict)
    session_exit: int | None = None
    monitor: list[Monitor] = field(default_factory=list)
    monitor_dropped: int = 0                                     # past MONITOR_KEEP (strict)
    problems: list[tuple[K, str]] = field(default_factory=list)  # stream findings
    unfinished: list[str] = field(default_factory=list)          # set up, never torn down
    # node id -> (token, value) of each seal reported while it ran (setup to teardown)
    seals: dict[str, list[tuple[str, str | None]]] = field(default_factory=dict)

    def problem(self, kind: K, detail: str) -> None:
        if len(self.problems) < 20:
            self.problems.append((kind, detail[:200]))


STARTED = '{"$tf": "started"}'      # the supervisor's first line (tfrun.STARTED)


def supervisor_started(text: str) -> bool:
    """Whether the supervisor reached the point of starting the tests. It says so
    on its own stream before any workspace code runs, so the tests can neither
    forge nor suppress the line: without it, our side failed."""
    return any(line == STARTED for line in text.splitlines()[:50])


def parse_meta(text: str) -> RunMeta | None:
    """The supervisor's JSON line: the last line of its output, or None."""
    for line in reversed(text.splitlines()):
        if line.startswith('{"$tf": "run"'):
            try:
                data = json.loads(line)
                data.pop("$tf", None)
                return RunMeta.model_validate(data)
            except (ValueError, ValidationError):
                return None
    return None


def _first_line(longrepr: str) -> str:
    text = str(longrepr or "").strip().splitlines()
    for ln in reversed(text):
        if ln.startswith("E ") or "Error" in ln:
            return ln.strip()[:300]
    return text[-1][:300] if text else ""


def _lines(text: str):
    """The lines of `text`, one at a time, without their line ends."""
    start, size = 0, len(text)
    while start < size:
        end = text.find("\n", start)
        end = size if end < 0 else end
        yield text[start:end].rstrip("\r")
        start = end + 1


def parse_events(text: str, strict: bool = True) -> Parsed:
    out = Parsed()
    started = finished = False
    phases: dict[str, set[str]] = {}
    monitored: set[tuple[str, str]] = set()
    running: str | None = None               # the test between its setup and teardown reports
    # One line at a time: a list of them all cost 0.5 GB for 15 MiB of two-byte
    # lines (red team 12), before the cap below could stop anything.
    for n, line in enumerate(_lines(text)):
        if not line.strip():
            continue
        if n >= MAX_EVENTS:
            out.problem(K.RESULTS_OVERFLOW, f"more than {MAX_EVENTS} events")
            break
        try:
            if len(line) > MAX_LINE:
                raise ValueError(f"a line of {len(line)} characters")
            raw = json.loads(line)
            if not isinstance(raw, dict):
                raise ValueError("not an object")
            raw = dict(raw)
            kind = raw.pop("$report_type", None)
            cls = EVENTS.get(kind) if isinstance(kind, str) else None
            if cls is None:
                raise ValueError(f"unknown event type {str(kind)[:40]!r}")
            ev = cls.model_validate({"report_type": kind, **raw})
        except (ValueError, ValidationError, RecursionError, MemoryError, TypeError) as exc:
            if strict:
                first = (str(exc).splitlines() or [type(exc).__name__])[0]
                out.problem(K.MALFORMED_EVENT, f"line {n + 1}: {first[:120]}")
            continue
        if isinstance(ev, Monitor):
            if finished and strict:
                out.problem(K.AFTER_SESSION, "a monitor event after the session finished")
            if strict:
                key = (ev.kind, ev.site)
                if key in monitored:
                    continue
                if len(monitored) >= MONITOR_KEEP:
                    out.monitor_dropped += 1
                    continue
                monitored.add(key)
            out.monitor.append(ev)
            continue
        if isinstance(ev, Seal):
            # Outside a test a seal is no test's: dropped. Past the cap the test fails (seals.py).
            if running is not None and not finished:
                got = out.seals.setdefault(running, [])
                if len(got) <= SEALS_KEPT:
                    got.append((ev.token, ev.value))
            continue
        if strict and finished:
            out.problem(K.AFTER_SESSION, f"{ev.report_type} after the session finished")
            continue
        if isinstance(ev, SessionStart):
            if started and strict:
                out.problem(K.DUPLICATE_EVENT, "a second SessionStart")
            started = True
        elif isinstance(ev, SessionFinish):
            if strict and not started:
                out.problem(K.MALFORMED_EVENT, "SessionFinish without SessionStart")
            finished = True
            out.session_exit = ev.exitstatus
        elif isinstance(ev, CollectReport):
            if strict and not started:
                out.problem(K.MALFORMED_EVENT, "a report before SessionStart")
            out.collect_errors[ev.nodeid] = _first_line(ev.longrepr)
        else:
            if strict and not started:
                out.problem(K.MALFORMED_EVENT, "a report before SessionStart")
            _fold(out, ev, phases, strict)
            if ev.when == "setup" and not ev.subtest:
                running = ev.nodeid
            elif ev.when == "teardown" and not ev.subtest:
                running = None
    # Set up and never torn down: running when the run ended (a hang, at a timeout).
    out.unfinished = [nid for nid, seen in phases.items() if "setup" in seen and "teardown" not in seen]
    return out


_ORDER = {"setup": 0, "call": 1, "teardown": 2}


def fold_reports(reports: list[dict]) -> dict[str, str]:
    """Outcomes by node id from test reports sent as plain records (a probe
    batch's children, validate/variants.py), folded as the run's events are;
    a record that is not a report is skipped."""
    out, phases = Parsed(), dict[str, set[str]]()
    for rec in reports:
        try:
            ev = TestReport.model_validate({"report_type": "TestReport", **rec})
        except ValidationError:
            continue
        _fold(out, ev, phases, strict=False)
    return out.outcomes


def _fold(out: Parsed, ev: TestReport, phases: dict[str, set[str]], strict: bool) -> None:
    nid, when = ev.nodeid, ev.when
    seen = phases.setdefault(nid, set())
    if ev.outcome == "rerun":                 # pytest-rerunfailures: the test starts over
        if strict:
            # Graded runs block the plugin: a rerun report is forged, to start
            # a failed test over and report it passed (red team of 2026-12-05).
            out.problem(K.DUPLICATE_EVENT, f"a rerun report for {nid}: graded runs do not rerun")
            return
        seen.clear()
        out.outcomes.pop(nid, None)
        return
    if strict:
        if ev.subtest:
            if when != "call" or "setup" not in seen or "teardown" in seen:
                out.problem(K.DUPLICATE_EVENT, f"a subtest report outside the call of {nid}")
                return
        elif when in seen or any(_ORDER.get(w, -1) > _ORDER[when] for w in seen) or (
                when != "setup" and "setup" not in seen):
            out.problem(K.DUPLICATE_EVENT, f"{when} of {nid} out of order or repeated")
            return
    if not ev.subtest:
        seen.add(when)
    out.durations[nid] = out.durations.get(nid, 0.0) + max(0.0, ev.duration)
    if ev.subtest:
        if ev.outcome == "failed":
            out.outcomes[nid] = "failed"
            seen.add("subtest-failed")
        return
    if when == "setup":
        if ev.outcome == "failed":
            out.outcomes[nid] = "error"
        elif ev.outcome == "skipped":
            out.outcomes[nid] = "xfailed" if ev.wasxfail else "skipped"
        else:
            out.outcomes[nid] = "error"      # until the call phase says more
    elif when == "call":
        if ev.outcome == "passed":
            out.outcomes[nid] = "failed" if "subtest-failed" in seen else "passed"
        elif ev.outcome == "failed":
            out.outcomes[nid] = "failed"
        else:
            out.outcomes[nid] = "xfailed" if ev.wasxfail else "skipped"
    elif when == "teardown" and ev.outcome == "failed":
        out.outcomes[nid] = "error"


@dataclass
class RunResult:
    outcomes: dict[str, str] = field(default_factory=dict)      # nodeid -> outcome
    durations: dict[str, float] = field(default_factory=dict)
    collect_errors: dict[str, str] = field(default_factory=dict)  # nodeid -> message
    exit_code: int | None = None
    session_exit: int | None = None
    test_seconds: float = 0.0
    wall_seconds: float = 0.0
    timed_out: bool = False
    log: str = ""
    coverage_file: Path | None = None    # set by the runner (a host path)
    session_finished: bool = False
    meta: RunMeta | None = None          # the supervisor's own observations
    monitor: list[Monitor] = field(default_factory=list)
    monitor_dropped: int = 0             # distinct monitor events past the parser's keep
    problems: list[tuple[K, str]] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)   # tests running when the run ended
    seals: dict[str, list[tuple[str, str | None]]] = field(default_factory=dict)   # node id -> reports


    # What the sandbox returned (up to MAX_OUTPUT), kept only for a run being
    # recorded as a grading case: every other run lets it go once read.
    raw: ExecResult | None = None


def read_run(res: ExecResult, naive: bool = False, keep_raw: bool = False) -> RunResult:
    """The run as the grader knows it, from what the sandbox returned: the
    supervisor's own line, and the report events inside it parsed against the
    schema (leniently for the naive grader). Pure, so that a recorded sandbox
    output replays to the same facts (tests/test_grading_replay.py)."""
    result = RunResult(wall_seconds=res.seconds, timed_out=res.timed_out, raw=res if keep_raw else None)
    meta = parse_meta(res.output)
    result.meta = meta
    if res.overflow:
        result.problems.append((K.OUTPUT_OVERFLOW, "the sandbox wrote more than the host reads"))
    if meta is not None:
        result.exit_code = meta.exit_code
        result.test_seconds = meta.seconds
        result.timed_out = result.timed_out or meta.timed_out
        result.log = meta.log
        parsed = parse_events(meta.results, strict=not naive)
        if meta.over_limit:
            result.problems.append((K.OVER_LIMIT, meta.over_limit))
        if meta.overflow and not naive:
            result.problems.append((K.RESULTS_OVERFLOW, f"more than {meta.results_bytes} bytes of reports"))
    else:
        result.exit_code = res.exit_code if not res.timed_out else None
        result.test_seconds = res.seconds
        result.log = res.output[-4000:]
        parsed = parse_events("", strict=False)
    result.outcomes, result.durations = parsed.outcomes, parsed.durations
    result.collect_errors, result.session_exit = parsed.collect_errors, parsed.session_exit
    result.monitor, result.monitor_dropped = parsed.monitor, parsed.monitor_dropped
    result.problems += parsed.problems
    result.unfinished = parsed.unfinished
    result.seals = parsed.seals
    result.session_finished = result.session_exit is not None
    return result
