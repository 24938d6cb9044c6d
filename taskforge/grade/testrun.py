"""Run pytest inside a sandbox and read per-test outcomes from its report events.

The in-sandbox supervisor (data/tfrun.py) runs as its own uid, drops pytest to
the sandbox user, and prints one JSON line: its own observations (exit code,
bare test time, overflow) and the report events the pytest process sent it.
The events are parsed against a schema (grade/events.py), never console text.
`test_seconds` is the bare test run, `wall_seconds` includes the exec round trip.
"""
from __future__ import annotations

import shutil
import threading
from pathlib import Path, PurePosixPath

from taskforge.errors import InfraError
from taskforge.fsutil import share_with_sandbox
from taskforge.grade.events import RunResult, read_run, supervisor_started
from taskforge.sandbox import RUNTIME, Sandbox

OUT_IN_SANDBOX = "/opt/tf/out"
LIB_IN_SANDBOX = "/opt/tf/lib"              # taskforge/data, mounted read-only
RUNNER = f"{LIB_IN_SANDBOX}/tfrun.py"
SUPERVISOR_USER = "0"        # the supervisor; it runs pytest as the sandbox's own user
SUPERVISOR = ["python", "-I", "-S", RUNNER]
LIB_HOST = RUNTIME
BASE_ARGS = ["-p", "no:cacheprovider", "-q", "-rN", "-o", "console_output_style=classic"]
ENV = {"PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp", "PYTHONHASHSEED": "0",
       "COLUMNS": "120", "COVERAGE_CORE": "ctrace"}


def supervisor_standby():
    """The supervisor parked ahead of its run (tfrun.py --park), for a sandbox
    spec whose one graded run should not wait for an interpreter to start."""
    from taskforge.sandbox import Standby

    return Standby(command=[*SUPERVISOR, "--park"], serves=SUPERVISOR, user=SUPERVISOR_USER)


MAX_ENV_LIST = 32 * 1024     # longer lists of test files go compressed (one env string <= 128 KiB)


def monitor_env(test_files: list[str], graded: list[str]) -> dict[str, str]:
    """What tfboot's monitor needs to know test code by identity: the shipped
    test files (workspace paths), `!` before the graded ones (tfboot.read_test_files)."""
    marked = set(graded)
    text = "\n".join(("!" if f in marked else "") + f
                     for f in sorted(set(test_files) | marked) if "\n" not in f)
    if len(text) > MAX_ENV_LIST:
        import base64
        import zlib

        text = "z:" + base64.b64encode(zlib.compress(text.encode(), 9)).decode()
    return {"TF_TEST_FILES": text}


def runner_mount():
    """The runner and guard plugin, read-only in every sandbox that runs tests."""
    from taskforge.sandbox import Mount

    return Mount(host=str(LIB_HOST), container=LIB_IN_SANDBOX, read_only=True)


def clean_output(text: str) -> str:
    """A sandbox's own complaint, as one short line for an error message."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " / ".join(lines[-3:])[:300]


class PytestRunner:
    """Runs pytest in one sandbox whose /opt/tf/out is `out_host` on the host."""

    _lock = threading.Lock()
    _counter = 0

    def __init__(self, sandbox: Sandbox, out_host: Path | None, options: list[str] | None = None,
                 paths: list[str] | None = None, env: dict[str, str] | None = None,
                 naive: bool = False, bound_workspace: bool = True):
        """`options` go to every run (the project's test command and pytest config);
        `paths` only to whole-suite runs, never to runs of chosen test ids. `naive`
        runs the old same-uid design (for the red-team suite's naive grader);
        without `bound_workspace` a run may write any amount into the workspace."""
        self.sandbox = sandbox
        self.out_host = out_host
        self.options = list(options or [])
        self.paths = list(paths or [])
        self.env = dict(env or {})
        self.naive = naive
        self.bound_workspace = bound_workspace

    def _next(self) -> str:
        with PytestRunner._lock:
            PytestRunner._counter += 1
            return f"r{PytestRunner._counter}"

    def run(self, args: list[str], timeout: float, cov_sources: list[str] | None = None,
            extra_args: list[str] | None = None, keep_raw: bool = False,
            env: dict[str, str] | None = None) -> RunResult:
        tag = self._next()
        host = None
        inside = f"{OUT_IN_SANDBOX}/{tag}"
        env = {**self.env, **(env or {}), **ENV}
        argv = list(BASE_ARGS)
        if cov_sources is not None:
            if self.out_host is None:
                raise ValueError("a coverage run needs an output directory")
            host = self.out_host / tag
            host.mkdir(parents=True, exist_ok=True)
            (host / "covrc").write_text("[run]\nparallel = False\nbranch = False\n")
            share_with_sandbox(host)
            # A directory by path; a single-module project by module name (coverage
            # measures nothing for a .py path given as a source).
            argv += [f"--cov={PurePosixPath(s).stem}" if s.endswith(".py")
                     else f"--cov=/workspace/{s}" if s else "--cov=/workspace" for s in cov_sources]
            argv += ["--cov-context=test", "--cov-report=", f"--cov-config={inside}/covrc"]
            env["COVERAGE_FILE"] = f"{inside}/coverage.db"
        whole_suite = all(a.startswith("-") for a in args)
        argv += self.options + list(extra_args or []) + list(args)
        if whole_suite:
            argv += self.paths
        sup = [*SUPERVISOR, "--timeout", str(timeout)]
        if self.bound_workspace:
            lim = self.sandbox.spec.limits
            sup += ["--workspace-growth", f"{lim.workspace_growth_mb << 20}:{lim.workspace_growth_files}"]
        uid, _, gid = self.sandbox.spec.user.partition(":")
        if self.naive:
            sup.append("--naive")
            user = self.sandbox.spec.user
        else:
            sup += ["--uid", uid, "--gid", gid or uid]
            user = SUPERVISOR_USER
        if not self.sandbox.started:
            # An earlier run overran its exec and the backend ended the sandbox:
            # a generation worker's state is its tree on the host, so a fresh
            # sandbox of the same spec serves the next run.
            self.sandbox.start()
        res = self.sandbox.exec([*sup, "--", *argv], timeout=timeout + 10, env=env, user=user)
        if not (res.timed_out or res.overflow or supervisor_started(res.output)):
            # Our side never got the tests going (a tree the sandbox user cannot
            # use, a missing runner, a sandbox that cannot exec): never the
            # solution's fault, so never its 0.
            raise InfraError("the test supervisor did not start in the sandbox: "
                             + (clean_output(res.output) or f"exit code {res.exit_code}, no output"))
        result = read_run(res, naive=self.naive, keep_raw=keep_raw)
        if host is not None and (host / "coverage.db").is_file():
            result.coverage_file = host / "coverage.db"
        elif host is not None:
            shutil.rmtree(host, ignore_errors=True)
        return result
