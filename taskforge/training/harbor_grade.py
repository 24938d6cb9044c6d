"""The grader a Harbor task runs at verification (tests/test.sh -> this file).

Standard library only: it runs in the task's own image, in Harbor's separate
verifier container, as root, after the agent's container is gone and its
/workspace was copied in as an artifact. It
1. puts the hidden tests (tests/hidden/, uploaded only now) over the
   workspace, root-owned and read-only, refusing a path that a symlink of the
   agent's would lead out of the workspace;
2. runs the FAIL_TO_PASS and PASS_TO_PASS tests under taskforge's supervisor
   (tests/tf/: tfrun drops pytest to uid 1000, bounds time and output, reaps
   every process, reports over a private pipe);
3. reads the supervisor's line and the report events strictly (one session,
   every phase once, in order) and writes /logs/verifier/reward.txt and
   reward.json itself: 1 only when every graded test passed. The tests, as
   uid 1000, cannot write there.
Our own failure (the supervisor never started) exits 3 with no reward file, so
Harbor records an error rather than a 0.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

TESTS = Path(os.environ.get("TF_TESTS", "/tests"))
WORKSPACE = Path(os.environ.get("TF_WORKSPACE", "/workspace"))
LOGS = Path(os.environ.get("TF_VERIFIER_LOGS", "/logs/verifier"))
LIB = Path("/opt/tf/lib")
UID = 1000
# pytest-rerunfailures blocked: every test runs once, and a rerun report is forged.
BASE_ARGS = ["-p", "no:cacheprovider", "-p", "no:rerunfailures", "-q", "-rN", "-o",
             "console_output_style=classic"]
ENV = {"PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp", "PYTHONHASHSEED": "0", "COLUMNS": "120",
       "PATH": "/opt/tf/venv/bin:/usr/local/bin:/usr/bin:/bin"}
STARTED = '{"$tf": "started"}'

RERUN_OPTS = ("--reruns", "--reruns-delay", "--only-rerun", "--rerun-except")


def without_reruns(options: list[str]) -> list[str]:
    """Test options with pytest-rerunfailures' flags (and their values) left out."""
    out, skip = [], False
    for o in options:
        if skip:
            skip = False
        elif o in RERUN_OPTS:
            skip = True
        elif not o.startswith(tuple(f"{r}=" for r in RERUN_OPTS)):
            out.append(o)
    return out


def inside(root: Path, rel: str) -> Path | None:
    """root/rel with its directory resolved, if that stays inside root (no symlinked
    directory of the agent's leads out); the file itself, a symlink or not, is replaced."""
    path = root / rel
    parent = path.parent.resolve()
    base = root.resolve()
    return parent / path.name if parent == base or base in parent.parents else None


def restore_hidden(hidden: Path, ws: Path) -> list[str]:
    """Copy the hidden tests over the workspace; the paths refused."""
    refused = []
    for src in sorted(p for p in hidden.rglob("*") if p.is_file()):
        rel = src.relative_to(hidden).as_posix()
        dest = inside(ws, rel)
        if dest is None:
            refused.append(rel)
            continue
        if dest.is_symlink() or dest.is_dir():
            shutil.rmtree(dest) if dest.is_dir() and not dest.is_symlink() else dest.unlink()
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        os.chown(dest, 0, 0)
        dest.chmod(0o644)
    return refused


def outcomes(results: str) -> tuple[dict[str, str], list[str]]:
    """nodeid -> passed/failed/skipped from the report events, and the problems
    of the stream (any makes the run worth 0): the session's order enforced."""
    out: dict[str, str] = {}
    seen: dict[str, set[str]] = {}
    problems: list[str] = []
    started = finished = False
    for line in results.splitlines():
        if not line.strip():
            continue
        try:
            ev = json.loads(line)
            kind = ev["$report_type"]
        except (ValueError, KeyError, TypeError):
            problems.append("a report line that is not an event")
            continue
        if kind == "Monitor":           # the monitor's observations: graded only by verify
            continue
        if finished:
            problems.append("events after the session finished")
        elif kind == "SessionStart":
            problems += ["a second session"] if started else []
            started = True
        elif not started:
            problems.append("events before the session started")
        elif kind == "SessionFinish":
            finished = True
        elif kind == "CollectReport":
            problems.append(f"collection error: {ev.get('nodeid', '')}")
        elif kind == "TestReport":
            node, when, result = ev.get("nodeid"), ev.get("when"), ev.get("outcome")
            if ev.get("subtest"):
                if result == "failed":
                    out[node] = "failed"
                continue
            if result == "rerun":
                problems.append(f"{node}: a rerun report (graded runs do not rerun)")
                continue
            phases = seen.setdefault(node, set())
            if when in phases or when not in ("setup", "call", "teardown"):
                problems.append(f"{node}: {when} reported twice")
            phases.add(when)
            if result == "failed" or (when == "call" and ev.get("wasxfail")):
                out[node] = "failed"
            elif when == "call" and out.get(node) != "failed":
                out[node] = result
            elif when == "setup" and result == "skipped":
                out.setdefault(node, "skipped")
    if not finished:
        problems.append("the session did not finish")
    return out, problems


def verdict(plan: dict, results: dict[str, str], problems: list[str], meta: dict) -> dict:
    graded = list(plan["FAIL_TO_PASS"]) + list(plan["PASS_TO_PASS"])
    failing = [t for t in graded if results.get(t) != "passed"]
    ok = not failing and not problems and not meta.get("timed_out") and not meta.get("overflow")
    return {"reward": 1.0 if ok else 0.0, "instance_id": plan["instance_id"],
            "f2p_passed": sum(results.get(t) == "passed" for t in plan["FAIL_TO_PASS"]),
            "f2p_total": len(plan["FAIL_TO_PASS"]),
            "p2p_passed": sum(results.get(t) == "passed" for t in plan["PASS_TO_PASS"]),
            "p2p_total": len(plan["PASS_TO_PASS"]), "failing": failing[:20],
            "problems": problems[:20], "timed_out": bool(meta.get("timed_out"))}


def main() -> int:
    plan = json.loads((TESTS / "grading.json").read_text())
    LOGS.mkdir(parents=True, exist_ok=True)
    for stale in ("reward.txt", "reward.json"):
        (LOGS / stale).unlink(missing_ok=True)
    refused = restore_hidden(TESTS / "hidden", WORKSPACE)
    LIB.mkdir(parents=True, exist_ok=True)
    for script in (TESTS / "tf").glob("*.py"):
        shutil.copyfile(script, LIB / script.name)
        (LIB / script.name).chmod(0o644)
    hidden = {(WORKSPACE / rel).resolve() for rel in plan["hidden_test_files"]}
    for p in [WORKSPACE, *WORKSPACE.rglob("*")]:
        if not p.is_symlink() and p.resolve() not in hidden:
            os.chown(p, UID, UID)
    argv = ["python", "-I", "-S", str(LIB / "tfrun.py"), "--timeout", str(plan["timeout"]),
            "--uid", str(UID), "--gid", str(UID), "--",
            *BASE_ARGS, *without_reruns(plan["test_options"]), *plan["FAIL_TO_PASS"], *plan["PASS_TO_PASS"]]
    env = {**ENV, **plan.get("test_env", {})}
    try:
        run = subprocess.run(argv, cwd=WORKSPACE, env=env, capture_output=True, text=True,
                             timeout=plan["timeout"] + 60)
    except subprocess.TimeoutExpired:
        print("the supervisor did not return", file=sys.stderr)
        return 3
    lines = run.stdout.splitlines()
    if STARTED not in lines[:50]:
        print("the test supervisor did not start:", run.stdout[-2000:], run.stderr[-2000:], file=sys.stderr)
        return 3
    meta = next((json.loads(ln) for ln in reversed(lines) if ln.startswith('{"$tf": "run"')), None)
    results: dict[str, str] = {}
    problems: list[str] = ["no supervisor report"]
    if meta is None:
        meta = {}
    else:
        results, problems = outcomes(meta.get("results", ""))
    problems += [f"hidden test path refused: {rel}" for rel in refused]
    result = verdict(plan, results, problems, meta)
    (LOGS / "taskforge.json").write_text(json.dumps(result, indent=2))     # details; Harbor reads reward.txt
    (LOGS / "reward.txt").write_text(f"{result['reward']:g}\n")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
