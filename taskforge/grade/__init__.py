"""Grading: what a verify run is judged on, apart from the sandbox that runs it.

- `findings`: the kinds of finding, their severity, and the policy that turns
  them into a reward of 0 or a flag for review;
- `events`: the supervisor's output and the report events, parsed against a
  schema in order, failing closed;
- `mutants`: must-fail copies of hidden tests (their expected values changed),
  and the random renaming that makes them indistinguishable at verify time;
- `static`: what a solution's changed files do, read without running them.
"""

import ast as _ast
import threading as _threading

_PARSE_LOCK = _threading.Lock()


def parse_python(source: str | bytes) -> _ast.Module:
    """ast.parse, one thread at a time: CPython 3.11 can fail with "AST
    constructor recursion depth mismatch" when threads build ASTs at once (the
    grading steps of parallel generation workers do)."""
    with _PARSE_LOCK:
        return _ast.parse(source)
