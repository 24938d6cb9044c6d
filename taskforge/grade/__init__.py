"""Grading: what a verify run is judged on, apart from the sandbox that runs it.

- `findings`: the kinds of finding, their severity, and the policy that turns
  them into a reward of 0 or a flag for review;
- `events`: the supervisor's output and the report events, parsed against a
  schema in order, failing closed;
- `copies`: must-fail copies of hidden tests (their expected values changed),
  and the random renaming that makes them indistinguishable at verify time;
- `static`: what a solution's changed files do, read without running them.
"""
