"""Run pytest inside a sandbox and read per-test outcomes from its report log.

Outcomes come from JSON lines in pytest-reportlog's format (one event per test phase),
never from console text. Timing comes from the in-sandbox runner (tfrun.py):
`test_seconds` is the bare test run, `wall_seconds` includes the exec round trip.
"""
from __future__ import annotations

import json
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from taskforge.fsutil import share_with_sandbox
from taskforge.sandbox import Sandbox

OUT_IN_SANDBOX = "/opt/tf/out"
LIB_IN_SANDBOX = "/opt/tf/lib"              # taskforge/data, mounted read-only
RUNNER = f"{LIB_IN_SANDBOX}/tfrun.py"
LIB_HOST = Path(__file__).resolve().parent / "data"
BASE_ARGS = ["-p", "no:cacheprovider", "-q", "-rN", "-o", "console_output_style=classic"]
ENV = {"PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp", "PYTHONHASHSEED": "0",
       "COLUMNS": "120", "COVERAGE_CORE": "ctrace"}


def runner_mount():
    """The runner and guard plugin, read-only in every sandbox that runs tests."""
    from taskforge.sandbox import Mount

    return Mount(host=str(LIB_HOST), container=LIB_IN_SANDBOX, read_only=True)


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
    coverage_file: Path | None = None
    tamper: list[str] = field(default_factory=list)     # guard findings: "kind: detail"
    session_finished: bool = False


def parse_report_log(text: str, tamper: list[str] | None = None
                     ) -> tuple[dict[str, str], dict[str, float], dict[str, str], int | None]:
    """Fold report events (pytest-reportlog's format) into one outcome per test id."""
    outcomes: dict[str, str] = {}
    durations: dict[str, float] = {}
    errors: dict[str, str] = {}
    exitstatus = None
    for line in text.splitlines():
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(ev, dict):
            continue
        kind = ev.get("$report_type")
        if kind == "Tamper" and tamper is not None:
            tamper.append(f"{ev.get('kind')}: {ev.get('detail')}")
        elif kind == "SessionFinish":
            exitstatus = ev.get("exitstatus")
        elif kind == "CollectReport" and ev.get("outcome") == "failed":
            errors[ev.get("nodeid", "")] = _first_line(ev.get("longrepr"))
        elif kind == "TestReport":
            nid, when, out = ev["nodeid"], ev.get("when"), ev.get("outcome")
            durations[nid] = durations.get(nid, 0.0) + float(ev.get("duration") or 0.0)
            xfail = "wasxfail" in ev
            if when == "setup":
                if out == "failed":
                    outcomes[nid] = "error"
                elif out == "skipped":
                    outcomes[nid] = "xfailed" if xfail else "skipped"
                else:
                    outcomes.setdefault(nid, "error")   # until the call phase says more
            elif when == "call":
                if out == "passed":
                    outcomes[nid] = "passed"
                elif out == "failed":
                    outcomes[nid] = "failed"
                else:
                    outcomes[nid] = "xfailed" if xfail else "skipped"
            elif when == "teardown" and out == "failed":
                outcomes[nid] = "error"
    return outcomes, durations, errors, exitstatus


def _first_line(longrepr) -> str:
    if isinstance(longrepr, dict):
        longrepr = json.dumps(longrepr)[:500]
    text = str(longrepr or "").strip().splitlines()
    for ln in reversed(text):
        if ln.startswith("E ") or "Error" in ln:
            return ln.strip()[:300]
    return text[-1][:300] if text else ""


class PytestRunner:
    """Runs pytest in one sandbox whose /opt/tf/out is `out_host` on the host."""

    _lock = threading.Lock()
    _counter = 0

    def __init__(self, sandbox: Sandbox, out_host: Path, options: list[str] | None = None,
                 paths: list[str] | None = None, env: dict[str, str] | None = None):
        """`options` go to every run (the project's test command and pytest config);
        `paths` only to whole-suite runs, never to runs of chosen test ids."""
        self.sandbox = sandbox
        self.out_host = out_host
        self.options = list(options or [])
        self.paths = list(paths or [])
        self.env = dict(env or {})

    def _next(self) -> str:
        with PytestRunner._lock:
            PytestRunner._counter += 1
            return f"r{PytestRunner._counter}"

    def run(self, args: list[str], timeout: float, cov_sources: list[str] | None = None,
            extra_args: list[str] | None = None) -> RunResult:
        tag = self._next()
        host = self.out_host / tag
        host.mkdir(parents=True, exist_ok=True)
        if cov_sources is not None:
            (host / "covrc").write_text("[run]\nparallel = False\nbranch = False\n")
        share_with_sandbox(host)
        inside = f"{OUT_IN_SANDBOX}/{tag}"
        argv = ["python", "-m", "pytest", *BASE_ARGS]
        env = {**self.env, **ENV}
        if cov_sources is not None:
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
        cmd = ["python", "-I", RUNNER, inside, str(timeout), "--", *argv]
        res = self.sandbox.exec(cmd, timeout=timeout + 10, env=env)
        result = RunResult(wall_seconds=res.seconds, timed_out=res.timed_out)
        # Results come from the runner's own stdout (through the engine), never a file.
        text = res.output
        meta = None
        for line in reversed(text.splitlines()):
            if line.startswith('{"$tf": "run"'):
                try:
                    meta = json.loads(line)
                except ValueError:
                    meta = None
                break
        if meta:
            result.exit_code = meta.get("exit_code")
            result.test_seconds = float(meta.get("seconds") or 0.0)
            result.timed_out = result.timed_out or bool(meta.get("timed_out"))
        else:
            result.exit_code = res.exit_code if not res.timed_out else None
            result.test_seconds = res.seconds
        try:
            result.log = (host / "log.txt").read_text(errors="replace")
        except OSError:
            result.log = ""
        (result.outcomes, result.durations, result.collect_errors,
         result.session_exit) = parse_report_log(text, result.tamper)
        result.session_finished = result.session_exit is not None
        if cov_sources is not None and (host / "coverage.db").is_file():
            result.coverage_file = host / "coverage.db"
        if result.coverage_file is None:      # the coverage run's dir stays for the caller
            shutil.rmtree(host, ignore_errors=True)
        return result
