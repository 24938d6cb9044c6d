"""Tasks -> Harbor task directories (`taskforge export SHARDS --to harbor --out DIR`).

One Harbor task per taskforge task:

    instruction.md                 the problem statement
    task.toml                      verifier in a separate
                                   container (environment_mode "separate"), /workspace its artifact
    environment/Dockerfile         FROM the task's own environment image, the workspace copied in
    environment/docker-compose.yaml  network_mode none (Harbor refuses "no-network" for local images)
    environment/workspace/         the task's workspace (its one-commit git repository)
    solution/solve.sh              applies the gold patch (Harbor's oracle agent)
    tests/test.sh                  runs tests/grade.py (taskforge.training.harbor_grade)
    tests/grade.py, grading.json   the grader and its plan (test ids, time limit, options)
    tests/hidden/                  the hidden tests (uploaded only at verification)
    tests/tf/                      taskforge's supervisor (tfrun, tfboot, tf_guard)

The environment image must exist where Harbor runs (it is built by `taskforge
generate`); Harbor's docker runner needs the Compose v2 CLI plugin.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from pydantic import BaseModel

from taskforge.errors import UserError
from taskforge.fsutil import atomic_write
from taskforge.package.store import load_task

RUNTIME = Path(__file__).resolve().parent.parent / "sandbox" / "runtime"
SUPERVISOR_FILES = ("tfrun.py", "tfboot.py", "tf_guard.py")
GRADER = Path(__file__).resolve().parent / "harbor_grade.py"


class HarborTask(BaseModel):
    instance_id: str
    path: str
    image: str


class HarborExport(BaseModel):
    out: str
    tasks: list[HarborTask]
    note: str = ("Harbor's docker runner needs the Compose v2 CLI plugin; each task's environment "
                 "image must exist on the machine that runs it (built by taskforge generate).")


def task_toml(instance_id: str, timeout: float, cpus: float, memory_mb: int) -> str:
    """The task's config. The verifier gets the agent's /workspace as an artifact
    in a fresh container of the same image, with no network, and its own time
    (the task's test time limit, plus set-up)."""
    return "\n".join([
        'schema_version = "1.4"',
        'artifacts = ["/workspace"]',
        "",
        "[metadata]",
        f"taskforge_instance_id = {json.dumps(instance_id)}",
        "",
        "[verifier]",
        f"timeout_sec = {max(120.0, timeout + 120.0):.1f}",
        'environment_mode = "separate"',
        'user = "root"',                  # the grader; it runs the tests as uid 1000
        "",
        "[agent]",
        "timeout_sec = 3600.0",
        'user = "1000"',                  # the sandbox user: the image and the root-owned files stay
        "",
        "[environment]",
        "build_timeout_sec = 600.0",
        f"cpus = {cpus:g}",
        f"memory_mb = {memory_mb}",
        "",
    ])


def dockerfile(image: str) -> str:
    # The container's own process as root: taskforge's supervisor ends every uid-1000
    # process after a run (kill -1 as that uid), which would stop a container whose
    # main process ran as the image's user 1000. The agent still runs as 1000 (task.toml).
    return (f"FROM {image}\n"
            "COPY --chown=1000:1000 workspace/ /workspace/\n"
            "WORKDIR /workspace\n"
            "USER root\n")


# Merged over Harbor's own compose file (which builds environment/Dockerfile).
COMPOSE = """services:
  main:
    network_mode: none
"""

SOLVE = """#!/bin/bash
# Harbor's oracle agent: the files as the gold patch leaves them (the image has no git).
set -euo pipefail
cd /workspace
exec python3 -I - <<'TASKFORGE_GOLD'
import base64, json, os
for rel, data in json.loads({files!r}).items():
    if data is None:
        os.path.lexists(rel) and os.unlink(rel)
        continue
    os.makedirs(os.path.dirname(rel) or ".", exist_ok=True)
    with open(rel, "wb") as fh:
        fh.write(base64.b64decode(data))
TASKFORGE_GOLD
"""


def gold_files(task_dir: Path, workspace: Path) -> dict[str, str | None]:
    """What the gold patch makes of each file it touches (base64; None: deleted),
    applied with git on the host."""
    import base64
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tf-harbor-") as tmp:
        tree = Path(tmp) / "w"
        shutil.copytree(workspace, tree, symlinks=True)
        patch = task_dir / "gold.patch"
        res = subprocess.run(["git", "apply", "--numstat", "--summary", str(patch)], cwd=tree,
                             capture_output=True, text=True)
        if res.returncode != 0:
            raise UserError(f"{task_dir.name}: the gold patch does not apply: {res.stderr.strip()[:200]}")
        names = [line.split("\t", 2)[2] for line in res.stdout.splitlines() if line.count("\t") >= 2]
        res = subprocess.run(["git", "apply", str(patch)], cwd=tree, capture_output=True, text=True)
        if res.returncode != 0:
            raise UserError(f"{task_dir.name}: the gold patch does not apply: {res.stderr.strip()[:200]}")
        return {rel: base64.b64encode((tree / rel).read_bytes()).decode() if (tree / rel).is_file() else None
                for rel in names}

TEST_SH = """#!/bin/bash
# taskforge's grader: hidden tests restored, the graded tests under taskforge's
# supervisor as uid 1000, /logs/verifier/reward.txt written by the grader itself.
exec python3 -I /tests/grade.py 2>&1
"""


def write_task(task_dir: Path, dest: Path) -> HarborTask:
    """One Harbor task directory for a taskforge task directory."""
    task = load_task(task_dir)
    rec = task.record
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "environment").mkdir(parents=True)
    shutil.copytree(task.workspace, dest / "environment" / "workspace", symlinks=True)
    atomic_write(dest / "environment" / "Dockerfile", dockerfile(rec.image_name))
    atomic_write(dest / "environment" / "docker-compose.yaml", COMPOSE)
    atomic_write(dest / "instruction.md", rec.problem_statement.rstrip() + "\n\nThe repository is at "
                 "/workspace. Change its code so that the described behaviour is implemented.\n")
    grading = rec.grading
    timeout = float(getattr(grading, "timeout", 0) or 300.0)
    atomic_write(dest / "task.toml", task_toml(rec.instance_id, timeout, 1.0, 2048))
    (dest / "solution").mkdir()
    atomic_write(dest / "solution" / "solve.sh",
                 SOLVE.format(files=json.dumps(gold_files(task.dir, task.workspace))))
    tests = dest / "tests"
    tests.mkdir()
    atomic_write(tests / "test.sh", TEST_SH)
    shutil.copyfile(GRADER, tests / "grade.py")
    shutil.copytree(task.dir / "hidden", tests / "hidden", symlinks=False)
    (tests / "tf").mkdir()
    for name in SUPERVISOR_FILES:
        shutil.copyfile(RUNTIME / name, tests / "tf" / name)
    plan = {"instance_id": rec.instance_id, "FAIL_TO_PASS": list(rec.FAIL_TO_PASS),
            "PASS_TO_PASS": list(rec.PASS_TO_PASS), "timeout": timeout,
            "test_options": list(rec.test_options), "test_env": dict(rec.test_env),
            "hidden_test_files": list(rec.hidden_test_files)}
    atomic_write(tests / "grading.json", json.dumps(plan, indent=1))
    for script in (dest / "solution" / "solve.sh", tests / "test.sh"):
        script.chmod(0o755)
    return HarborTask(instance_id=rec.instance_id, path=dest.name, image=rec.image_name)


def export_harbor(source: str | Path, out: Path, log=None) -> HarborExport:
    """Every task of `source` (a shard directory or a directory of tasks) as a
    Harbor task under `out` (which must not exist or be empty)."""
    from taskforge.training.rewards import TaskSource

    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise UserError(f"{out} exists and is not empty")
    tasks = TaskSource(source)
    ids = tasks.ids()
    if not ids:
        raise UserError(f"no tasks in {source}")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for iid in ids:
        written.append(write_task(tasks.get(iid), out / iid))
        if log:
            log(f"{out / iid}")
    report = HarborExport(out=str(out), tasks=written)
    atomic_write(out / "export.json", report.model_dump_json(indent=2))
    return report
