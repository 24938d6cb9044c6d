"""`verify`: grade a candidate solution against a task's hidden tests.

A fresh, hardened sandbox per call (no network, read-only root, no
capabilities, non-root, CPU/memory/pids limits, a timeout), destroyed after.
The solution is applied to a copy of the workspace; then every test file and
test configuration is restored from the task's own copy and test files the
task did not ship are removed, so the solution cannot grade itself.
"""
from __future__ import annotations

import filecmp
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from taskforge.errors import InfraError, TaskforgeError, UserError
from taskforge.fsutil import copy_tree, share_with_sandbox
from taskforge.layout import is_protected_path, walk
from taskforge.models import TestResult, VerifyResult
from taskforge.package import apply_patch
from taskforge.sandbox import Limits, Mount, SandboxSpec, open_sandbox
from taskforge.tamper import is_fatal, remove_startup_hooks, scan_solution
from taskforge.task_store import Task, load_task
from taskforge.testrun import OUT_IN_SANDBOX, PytestRunner, runner_mount

INFRA_RETRIES = 2


@dataclass
class Solution:
    kind: Literal["gold", "empty", "patch", "dir"]
    patch: str | None = None       # unified diff text, for kind == "patch"
    path: Path | None = None       # a solution work tree, for kind == "dir"

    def describe(self) -> str:
        return self.kind if self.kind in ("gold", "empty") else f"{self.kind}:{self.path or 'inline'}"

    @classmethod
    def gold(cls) -> "Solution":
        return cls("gold")

    @classmethod
    def empty(cls) -> "Solution":
        return cls("empty")

    @classmethod
    def from_patch(cls, text: str) -> "Solution":
        return cls("patch", patch=text)

    @classmethod
    def from_dir(cls, path: str | Path) -> "Solution":
        p = Path(path)
        if not p.is_dir():
            raise UserError(f"no such solution directory: {path}")
        return cls("dir", path=p)


def restore_protected(task: Task, tree: Path) -> list[str]:
    """Put back every test file and config from the task's copy; drop unshipped ones."""
    notes: list[str] = []
    shipped = set(walk(task.hidden))
    ws = task.workspace
    for rel in sorted(shipped):
        dst = tree / rel
        orig_ws = ws / rel
        if dst.is_file() and orig_ws.is_file() and not filecmp.cmp(dst, orig_ws, shallow=False):
            notes.append(f"restored-file: {rel} was modified")
        elif not dst.exists() and orig_ws.is_file():
            notes.append(f"restored-file: {rel} was deleted")
        if dst.is_dir() and not dst.is_symlink():
            shutil.rmtree(dst)
        elif dst.is_symlink():
            dst.unlink()
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(task.hidden / rel, dst)
    for rel in walk(tree):
        if rel not in shipped and is_protected_path(rel):
            (tree / rel).unlink()
            notes.append(f"removed-unshipped: {rel}")
    return notes


def verify(task_dir: str | Path, solution: Solution, timeout: float = 900.0,
           limits: Limits | None = None) -> VerifyResult:
    """Grade `solution`; infrastructure failures come back with `error` set, reward None."""
    task = load_task(task_dir)
    rec = task.record
    t0 = time.monotonic()
    result = VerifyResult(instance_id=rec.instance_id, solution=solution.describe(), reward=None,
                          resolved=False, f2p_passed=0, f2p_total=len(rec.FAIL_TO_PASS),
                          p2p_passed=0, p2p_total=len(rec.PASS_TO_PASS), p2p_regressions=[],
                          f2p_failures=[], tests=[])
    with tempfile.TemporaryDirectory(prefix="tf-verify-") as tmp:
        tree = Path(tmp) / "workspace"
        out = Path(tmp) / "out"
        out.mkdir()
        if solution.kind == "dir":
            copy_tree(solution.path, tree)
        else:
            copy_tree(task.workspace, tree)
        patch = rec.patch if solution.kind == "gold" else solution.patch
        if solution.kind in ("gold", "patch"):
            err = apply_patch(tree, patch or "")
            if err:
                return _finish(result, t0, reward=0.0, tampering=[f"patch-rejected: {err}"])
        shutil.rmtree(tree / ".git", ignore_errors=True)
        result.tampering += restore_protected(task, tree)
        result.tampering += remove_startup_hooks(tree, task.workspace)
        result.tampering += scan_solution(tree, task.workspace)
        canaries = plant_canaries(tree, rec.FAIL_TO_PASS)
        share_with_sandbox(tree)
        share_with_sandbox(out)
        spec = SandboxSpec(image=rec.image_name,
                           mounts=[Mount(host=str(tree), container="/workspace"),
                                   Mount(host=str(out), container=OUT_IN_SANDBOX),
                                   runner_mount()],
                           limits=limits or Limits(), labels={"taskforge.role": "verify",
                                                              "taskforge.task": rec.instance_id[:60]})
        run = None
        last_error = None
        for attempt in range(1 + INFRA_RETRIES):
            try:
                with open_sandbox(spec) as sb:
                    run = PytestRunner(sb, out, rec.test_options, rec.test_paths,
                                       rec.test_env).run(["--continue-on-collection-errors"],
                                                         timeout=timeout)
                break
            except InfraError as exc:
                last_error = exc.message
                if "not found" in exc.message:
                    break
                time.sleep(1 + attempt)
        if run is None:
            result.error = last_error or "sandbox failed"
            return _finish(result, t0, reward=None)
    return grade(result, rec, run, t0, canaries)


def plant_canaries(tree: Path, f2p: list[str]) -> dict[str, str]:
    """Two tests with fresh random names in a hidden test file: one must pass and
    one must fail. A run that reports otherwise was rewritten."""
    target = f2p[0].split("::")[0]
    path = tree / target
    if not path.is_file():
        return {}
    func = f2p[0].split("::")[-1].split("[")[0]
    prefix = func.split("_")[0] + "_" if "_" in func else "test_"
    ok, bad, attr = (secrets.token_hex(6) for _ in range(3))
    code = (f"\n\n\ndef {prefix}{ok}():\n    assert True\n\n\n"
            f"def {prefix}{bad}():\n    raise AttributeError(\"module has no attribute '{attr}'\")\n")
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(code)
    return {f"{target}::{prefix}{ok}": "passed", f"{target}::{prefix}{bad}": "failed"}


def grade(result: VerifyResult, rec, run, t0: float, canaries: dict[str, str] | None = None
          ) -> VerifyResult:
    result.exit_code = run.exit_code
    result.timed_out = run.timed_out
    result.test_seconds = round(run.test_seconds, 3)
    expected = rec.FAIL_TO_PASS + rec.PASS_TO_PASS
    result.tests = [TestResult(nodeid=t, outcome=run.outcomes.get(t, "missing"),
                               duration=round(run.durations.get(t, 0.0), 4)) for t in expected]
    f2p_ok = [t for t in rec.FAIL_TO_PASS if run.outcomes.get(t) == "passed"]
    p2p_ok = [t for t in rec.PASS_TO_PASS if run.outcomes.get(t) == "passed"]
    result.f2p_passed, result.p2p_passed = len(f2p_ok), len(p2p_ok)
    result.f2p_failures = sorted(set(rec.FAIL_TO_PASS) - set(f2p_ok))
    result.p2p_regressions = sorted(set(rec.PASS_TO_PASS) - set(p2p_ok))
    result.tampering += run.tamper
    if run.timed_out:
        result.tampering.append("timeout: the test run was killed at the time limit")
    result.collection_errors = [f"{k or '<session>'}: {v}" for k, v in sorted(run.collect_errors.items())]
    missing = [t for t in expected if t not in run.outcomes]
    uncollected = {k.split("::")[0] for k in run.collect_errors}
    unexplained = [t for t in missing if t.split("::")[0] not in uncollected]
    if not run.timed_out:
        if not run.session_finished:
            result.tampering.append(f"early-exit: the test session did not finish "
                                    f"(exit code {run.exit_code})")
        elif run.exit_code != run.session_exit:
            result.tampering.append(f"exit-code: process exited {run.exit_code}, "
                                    f"session reported {run.session_exit}")
        elif run.exit_code == 0 and (missing or any(
                v in ("failed", "error") for v in run.outcomes.values())):
            result.tampering.append("exit-code: exit 0 with tests missing or failing")
        if unexplained and run.session_finished:
            result.tampering.append(f"missing-results: {len(unexplained)} expected test(s) "
                                    f"produced no result")
    for nodeid, want in (canaries or {}).items():
        got = run.outcomes.get(nodeid, "missing")
        if got != want and nodeid.split("::")[0] not in uncollected and not run.timed_out:
            result.tampering.append(f"canary: {nodeid.split('::')[-1]} should have {want}, got {got}")
    fatal = any(is_fatal(t) for t in result.tampering)
    resolved = (not result.f2p_failures and not result.p2p_regressions and not run.timed_out
                and not fatal)
    return _finish(result, t0, reward=1.0 if resolved else 0.0)


def _finish(result: VerifyResult, t0: float, reward: float | None,
            tampering: list[str] | None = None) -> VerifyResult:
    result.reward = reward
    result.resolved = reward == 1.0
    if tampering:
        result.tampering += tampering
    result.wall_seconds = round(time.monotonic() - t0, 3)
    return result


def verify_many(pairs: list[tuple[str | Path, Solution]], workers: int = 2,
                timeout: float = 900.0) -> list[VerifyResult]:
    """Verify many (task, solution) pairs concurrently, results in input order."""
    from concurrent.futures import ThreadPoolExecutor

    def one(pair):
        try:
            return verify(pair[0], pair[1], timeout=timeout)
        except TaskforgeError as exc:
            return VerifyResult(instance_id=str(pair[0]), solution=pair[1].describe(), reward=None,
                                resolved=False, f2p_passed=0, f2p_total=0, p2p_passed=0,
                                p2p_total=0, p2p_regressions=[], f2p_failures=[], tests=[],
                                error=exc.message)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(one, pairs))
