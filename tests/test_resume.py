"""generate killed with SIGKILL mid-run, then rerun, ends with exactly the task
set of an uninterrupted run, byte-identical workspaces (the git index included),
no finished task rewritten, and nothing of the dead run left behind."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from taskforge.sandbox.docker.engine import LABEL, client
from tests.conftest import FIXTURES, make_git_repo

MAX_TASKS = 6


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under root, .git included, by relative path."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


def task_dirs(out: Path) -> set[str]:
    """Finished tasks: a `.tmp-*` dir is one being assembled (task.json is written
    inside it just before the rename), which the rerun removes."""
    return {p.parent.name for p in out.glob("*/task.json") if not p.parent.name.startswith(".tmp-")}


def _owned_by(pid: int) -> list:
    """The containers of the run with this pid (their owner label)."""
    return [c for c in client().containers.list(all=True, ignore_removed=True, filters={"label": LABEL})
            if (c.labels or {}).get("taskforge.owner", "").split(":")[1:2] == [str(pid)]]


def cli(repo: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "taskforge", "generate", str(repo), "--out", str(out),
            "--max-tasks", str(MAX_TASKS), "--jobs", "2", "-q"]


def test_sigkill_then_rerun_equals_uninterrupted(fixture_repos, base_image, tmp_path):
    # The reference: a complete, uninterrupted run (its own copy: other tests run git
    # in the shared fixtures' workspaces, and git rewrites the index when it does).
    ref_out = tmp_path / "ref"
    res = subprocess.run(cli(fixture_repos["geomlib"], ref_out) + ["--json"], capture_output=True,
                         text=True, timeout=900)
    assert res.returncode == 0, res.stderr

    ref_tasks = json.loads(res.stdout)["tasks"]
    assert len(ref_tasks) == MAX_TASKS
    out = tmp_path / "out"
    cmd = cli(fixture_repos["geomlib"], out)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None and len(task_dirs(out)) < 2:
        time.sleep(0.05)
    assert proc.poll() is None, "generate finished before it could be killed: " + \
        proc.stderr.read().decode()[-500:]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    survivors = task_dirs(out)
    assert survivors, "no task was written before the kill"
    assert len(survivors) < MAX_TASKS
    before = {t: (out / t / "task.json").stat().st_mtime_ns for t in survivors}
    dead = _owned_by(proc.pid)
    assert dead, "the killed run's warm containers should still exist before the rerun"

    res = subprocess.run(cmd[:-1] + ["--json"], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr
    # Same task set as the uninterrupted run, with byte-identical workspaces.
    assert task_dirs(out) == set(ref_tasks)
    for tid in ref_tasks:
        assert tree_bytes(out / tid / "workspace") == tree_bytes(ref_out / tid / "workspace"), tid
        for f in ("gold.patch", "test.patch", "problem_statement.md"):
            assert (out / tid / f).read_bytes() == (ref_out / tid / f).read_bytes(), (tid, f)
    # Finished work was not redone: the tasks written before the kill are untouched,
    # and the baseline was not run again.
    for tid, mtime in before.items():
        assert (out / tid / "task.json").stat().st_mtime_ns == mtime, tid
    resumed = json.loads(res.stdout)["resumed"]
    assert resumed["baseline"] is True
    assert resumed["tasks"] == len(survivors)
    left = {c.id for c in client().containers.list(all=True, ignore_removed=True, filters={"label": LABEL})}
    assert not left & {c.id for c in dead}, "the rerun must remove the dead run's containers"
    assert not list(out.glob(".tmp-*"))


def test_sigterm_unwinds_like_ctrl_c(fixture_repos, base_image, tmp_path):
    """A scheduler's stop (SIGTERM: `timeout`, `kill`, a cluster's preemption)
    closes the run's sandboxes and leaves no half-written task: exit 130 and
    "interrupted", as Ctrl-C. Python's default killed the process where it stood
    and its containers lived until a later run reaped them."""
    out = tmp_path / "out"
    proc = subprocess.Popen(cli(fixture_repos["geomlib"], out), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None and not _owned_by(proc.pid):
        time.sleep(0.1)
    try:
        assert proc.poll() is None and _owned_by(proc.pid), "no sandbox was started to interrupt"
        time.sleep(2)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, (proc.returncode, err.decode()[-500:])
    assert "interrupted" in err.decode()
    assert _owned_by(proc.pid) == []
    assert not [p for p in out.iterdir() if p.name.startswith(".tmp-")]


SLOW = 12      # seconds of a remaining-suite test: every validation runs it


def test_sigterm_closes_the_checks_in_flight(base_image, tmp_path):
    """A stop during validation does not wait for the candidates in flight to
    finish their checks (a remaining suite, calibration, the final verifies: a
    minute a candidate on a real suite, past a scheduler's grace period). Their
    sandboxes close under them, and what they conclude after the stop is
    neither journaled nor written: the rerun settles them afresh."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "geomlib", src)
    (src / "tests" / "test_slow.py").write_text(
        f"import time\n\n\ndef test_takes_a_while():\n    time.sleep({SLOW})\n")
    repo = make_git_repo(src, tmp_path / "repo")
    out = tmp_path / "out"
    proc = subprocess.Popen(cli(repo, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    state = out / ".state"
    deadline = time.monotonic() + 600
    # the baseline (two suite runs) saved: validation has begun
    while time.monotonic() < deadline and proc.poll() is None and not list(state.glob("baseline-*.json")):
        time.sleep(0.1)
    try:
        assert proc.poll() is None, proc.stderr.read().decode()[-500:] if proc.stderr else ""
        time.sleep(3)               # the workers are inside their first remaining-suite runs
        journaled = set((state / "verdicts").iterdir())
        written = task_dirs(out)
        proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        _, err = proc.communicate(timeout=300)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, (proc.returncode, err.decode()[-500:])
    # Without the stop, the run waited for its two candidates' remaining suites
    # and then their calibration and final verifies: two more suite runs at least.
    assert took < SLOW - 2, f"the stop waited {took:.1f} s for the checks in flight"
    assert set((state / "verdicts").iterdir()) == journaled, "a verdict the stop caused was journaled"
    assert task_dirs(out) == written
    assert _owned_by(proc.pid) == []
    assert not [p for p in out.iterdir() if p.name.startswith(".tmp-")]
