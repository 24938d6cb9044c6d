"""The grader's decisions as pure functions: run facts in, findings out.

No I/O and no sandbox here, so that each rule is a table test
(tests/test_decide.py) and a one-line change to one fails a fast test. `verify`
gathers the facts; `grade` applies these.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from taskforge.grade.findings import FindingKind as K

Problem = tuple[K, str]


def exit_problems(*, finished: bool, exit_code: int | None, session_exit: int | None,
                  outcomes: Mapping[str, str], run_outcomes: Mapping[str, str],
                  collect_errors: Mapping[str, str], expected: Iterable[str]) -> list[Problem]:
    """What the process's exit says about the reports. A session that never
    finished, an exit code the session did not report, exit 0 beside failures
    or missing tests, exit 1 with nothing failed: the reports are not the tests'
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
    elif exit_code == 1 and not collect_errors and not failing:
        out.append((K.EXIT_CODE, "exit 1 although every test passed"))
    if unexplained and finished:
        out.append((K.MISSING_RESULTS, f"{len(unexplained)} expected test(s) produced no result"))
    return out
