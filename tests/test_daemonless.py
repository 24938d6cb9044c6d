"""Grading where no Docker daemon exists: the bubblewrap backend, its
environments built from each task's recorded recipe, through the CLI a
training node would run, with DOCKER_HOST pointing at nothing."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from taskforge.package.store import load_task
from taskforge.sandbox.bwrap import rootfs
from tests.conftest import CLI

pytestmark = pytest.mark.bwrap


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env,
                          timeout=600)


def test_grading_without_docker(generated, bwrap_base, tmp_path):
    out, report = generated("ledger")
    tasks = [out / t for t in sorted(report.tasks)[:3]]
    prep = cli("env", "prepare", *map(str, tasks), "--json")
    assert prep.returncode == 0 and "Traceback" not in prep.stderr, prep.stderr
    envs = [json.loads(line) for line in prep.stdout.splitlines()]
    assert len(envs) == len(tasks) and all(Path(e["path"]).is_dir() for e in envs), envs

    for task in tasks:
        gold = json.loads(cli("verify", str(task), "--gold", "--sandbox", "bwrap", "--json").stdout)
        assert gold["reward"] == 1.0 and gold["error"] is None, gold
        empty = json.loads(cli("verify", str(task), "--empty", "--sandbox", "bwrap", "--json").stdout)
        assert empty["reward"] == 0.0 and empty["f2p_passed"] < empty["f2p_total"], empty

    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"task": str(t), "solution": s}) + "\n"
                             for t in tasks for s in ("gold", "empty")))
    batch = cli("verify-batch", str(pairs), "--workers", "2", "--sandbox", "bwrap", "--json")
    assert [json.loads(x)["reward"] for x in batch.stdout.splitlines()] == [1.0, 0.0] * len(tasks)

    # The same engine-less node has no Docker: the Docker backend says so, as an
    # infrastructure error, not a zero.
    docker = json.loads(cli("verify", str(tasks[0]), "--gold", "--sandbox", "docker", "--json").stdout)
    assert docker["reward"] is None and "Docker engine" in docker["error"], docker


def test_an_environment_directory_holds_no_removed_code(generated, bwrap_base):
    """The environment is built with the hidden tests put back (what only they
    import gets installed) and the workspace at /workspace: neither the hidden
    tests nor the removed definitions may stay in the directory."""
    out, report = generated("ledger")
    task = out / sorted(report.tasks)[0]
    rec = load_task(task).record
    root = rootfs.prepare_task(load_task(task).environment_request(), log=lambda s: None)
    assert not any((root / "workspace").iterdir())
    names = [s.qualname.rsplit(".", 1)[-1] for s in rec.feature.symbols]
    hidden = [Path(f).name for f in rec.hidden_test_files]
    grep = subprocess.run(["grep", "-rIl", "--include=*.py", "-e", f"def {names[0]}(",
                           str(root / "opt"), str(root / "usr/local")], capture_output=True, text=True)
    assert grep.stdout == "", grep.stdout
    found = subprocess.run(["find", str(root), "-xdev", "-name", hidden[0]], capture_output=True,
                           text=True).stdout
    assert found == "", found


def test_a_task_without_a_recipe_is_a_clear_error(generated, tmp_path):
    out, report = generated("ledger")
    task = tmp_path / "old-task"
    subprocess.run(["cp", "-a", str(out / sorted(report.tasks)[0]), str(task)], check=True)
    rec = json.loads((task / "task.json").read_text())
    rec.pop("environment")
    rec["image_name"] = "taskforge/env-never-built:0"
    (task / "task.json").write_text(json.dumps(rec))
    res = cli("env", "prepare", str(task))
    assert res.returncode == 3 and "Traceback" not in res.stderr
    assert res.stderr.count("\n") == 1 and "no environment recipe" in res.stderr, res.stderr


def test_a_docker_node_builds_the_environment_from_the_recipe(generated, tmp_path):
    """A node whose engine never saw generation builds the image from the task's
    recipe, under the name the task carries."""
    import docker

    from taskforge.grade.verify import Solution, verify
    from taskforge.sandbox.docker.images import image_exists, prepare_task_image

    out, report = generated("ledger")
    task = tmp_path / "moved"
    subprocess.run(["cp", "-a", str(out / sorted(report.tasks)[0]), str(task)], check=True)
    rec = json.loads((task / "task.json").read_text())
    name = f"taskforge/env-rebuilt:{os.getpid()}"
    rec["image_name"] = name
    (task / "task.json").write_text(json.dumps(rec))
    assert not image_exists(name)
    try:
        req = load_task(task).environment_request()
        assert prepare_task_image(req, log=lambda s: None) == name and image_exists(name)
        assert verify(task, Solution.gold(), backend="docker").reward == 1.0
        assert verify(task, Solution.empty(), backend="docker").reward == 0.0
    finally:
        docker.from_env().images.remove(name, force=True)
