"""Harbor export: `taskforge export --to harbor`, checked by Harbor's own code (its
task loader and `harbor lint`) for every exported task, and its runner's oracle
agent (the gold: 1) and no-op agent (0) on a task; plus table tests of the
in-container grader's strict reading of the report stream. Harbor needs Python
>= 3.12 and the Compose v2 plugin: scripts/install-harbor.sh (a session fixture
here) installs both, as on a fresh machine."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from taskforge.training import harbor_grade
from tests.conftest import ROOT, run_cli

pytestmark = pytest.mark.frameworks


def ev(report_type: str, **fields) -> str:
    return json.dumps({"$report_type": report_type, **fields})


def report(node: str, outcome: str = "passed", whens=("setup", "call", "teardown")) -> list[str]:
    return [ev("TestReport", nodeid=node, when=w, outcome=outcome if w == "call" else "passed")
            for w in whens]


START, FINISH = ev("SessionStart", pid=1), ev("SessionFinish", exitstatus=0)


@pytest.mark.parametrize("lines, outcomes, problem", [
    ([START, *report("t::a"), *report("t::b", "failed"), FINISH], {"t::a": "passed", "t::b": "failed"}, None),
    ([START, ev("Monitor", kind="open"), *report("t::a"), FINISH], {"t::a": "passed"}, None),
    ([START, *report("t::a"), FINISH, *report("t::b")], {"t::a": "passed"}, "after the session"),
    ([*report("t::a"), FINISH], {}, "before the session started"),
    ([START, *report("t::a")], {"t::a": "passed"}, "did not finish"),
    ([START, *report("t::a"), *report("t::a"), FINISH], {"t::a": "passed"}, "reported twice"),
    ([START, "not json", *report("t::a"), FINISH], {"t::a": "passed"}, "not an event"),
    ([START, ev("CollectReport", nodeid="t.py", outcome="failed"), FINISH], {}, "collection error"),
    ([START, START, FINISH], {}, "a second session"),
])
def test_the_grader_reads_the_stream_strictly(lines, outcomes, problem):
    got, problems = harbor_grade.outcomes("\n".join(lines))
    assert got == outcomes
    assert (problem is None and problems == []) or any(problem in p for p in problems), problems


@pytest.mark.parametrize("results, problems, meta, reward", [
    ({"f": "passed", "p": "passed"}, [], {}, 1.0),
    ({"f": "passed", "p": "failed"}, [], {}, 0.0),
    ({"f": "passed"}, [], {}, 0.0),                                  # a graded test never ran
    ({"f": "passed", "p": "passed"}, ["events after the session finished"], {}, 0.0),
    ({"f": "passed", "p": "passed"}, [], {"timed_out": True}, 0.0),
])
def test_verdict(results, problems, meta, reward):
    plan = {"instance_id": "x", "FAIL_TO_PASS": ["f"], "PASS_TO_PASS": ["p"]}
    assert harbor_grade.verdict(plan, results, problems, meta)["reward"] == reward


def test_hidden_tests_never_follow_an_agents_symlink_out(tmp_path):
    """A symlink the agent left where a hidden test goes is replaced, and a
    symlinked directory leading out of the workspace is refused, not written through."""
    ws, hidden, outside = tmp_path / "ws", tmp_path / "hidden", tmp_path / "outside"
    for d in (ws, hidden / "tests", hidden / "out", outside):
        d.mkdir(parents=True)
    (hidden / "tests" / "test_a.py").write_text("def test_a(): pass\n")
    (hidden / "out" / "test_b.py").write_text("def test_b(): pass\n")
    (ws / "tests").mkdir()
    (ws / "tests" / "test_a.py").symlink_to(outside / "victim.py")
    (ws / "out").symlink_to(outside)
    refused = harbor_grade.restore_hidden(hidden, ws)
    assert refused == ["out/test_b.py"]
    assert not (outside / "victim.py").exists() and not (outside / "test_b.py").exists()
    a = ws / "tests" / "test_a.py"
    assert not a.is_symlink() and a.read_text() == "def test_a(): pass\n" and a.stat().st_mode & 0o777 == 0o644


# ------------------------------------------------------------ Harbor's own code
@pytest.fixture(scope="session")
def harbor_home(tmp_path_factory) -> Path:
    """harbor's venv and the Compose v2 plugin, installed by the script CI runs."""
    base = os.environ.get("TASKFORGE_CACHE") or str(Path.home() / ".cache" / "taskforge")
    res = subprocess.run(["bash", str(ROOT / "scripts" / "install-harbor.sh"), f"{base}/harbor"],
                         capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return Path(res.stdout.strip().splitlines()[-1])


def harbor(home: Path, *args, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "DOCKER_CONFIG": str(home / "docker-config")}
    return subprocess.run([str(home / "venv" / "bin" / "harbor"), *map(str, args)], env=env,
                          capture_output=True, text=True, **kw)


@pytest.fixture(scope="module")
def exported(tasks, tmp_path_factory) -> Path:
    out, _ = tasks
    dest = tmp_path_factory.mktemp("harbor") / "tasks"
    res = run_cli("export", out, "--to", "harbor", "--out", dest, "--json")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert len(report["tasks"]) == len([p for p in out.iterdir() if (p / "task.json").is_file()])
    return dest


def test_harbors_loader_and_lint_accept_every_exported_task(exported, harbor_home):
    dirs = sorted(p for p in exported.iterdir() if p.is_dir())
    check = ("import sys\nfrom harbor.models.task.task import Task\n"
             "for d in sys.argv[1:]:\n"
             "    assert Task.is_valid_dir(d), d\n"
             "    t = Task(d)\n"
             "    assert t.config.verifier.environment_mode.value == 'separate', d\n"
             "    print(d, t.config.artifacts)\n")
    res = subprocess.run([str(harbor_home / "venv" / "bin" / "python"), "-c", check, *map(str, dirs)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and len(res.stdout.splitlines()) == len(dirs), res.stderr[-2000:]
    lint = harbor(harbor_home, "lint", "--json", *dirs, timeout=600)
    assert lint.returncode == 0 and json.loads(lint.stdout or "[]") == [], lint.stdout[-2000:] + lint.stderr[-2000:]
    for d in dirs:                    # the hidden tests only in tests/, never in the agent's image
        hidden = {p.relative_to(d / "tests" / "hidden") for p in (d / "tests" / "hidden").rglob("*.py")}
        rec = json.loads((d / "tests" / "grading.json").read_text())
        for rel in rec["hidden_test_files"]:
            assert Path(rel) in hidden
            ws = d / "environment" / "workspace" / rel
            assert not ws.exists() or ws.read_bytes() != (d / "tests" / "hidden" / rel).read_bytes()


HARBOR_INFRA_ERRORS = {"DownloadVerifierDirError", "AddTestsDirError", "EnvironmentStartTimeoutError"}


@pytest.mark.docker
def test_harbor_runner_oracle_1_nop_0(exported, harbor_home, tmp_path):
    task = sorted(p for p in exported.iterdir() if p.is_dir())[0]
    rewards = {}
    for agent in ("oracle", "nop"):
        for attempt in range(3):
            # Harbor's own infrastructure errors (a `docker compose cp` that fails on a
            # loaded shared engine) end a trial with no verifier result: tried again,
            # never read as a reward.
            name = f"{agent}-{attempt}"
            res = harbor(harbor_home, "trial", "start", "-p", task, "-a", agent, "-e", "docker",
                         "--trials-dir", tmp_path, "--trial-name", name, timeout=1500, cwd=tmp_path)
            result = json.loads((tmp_path / name / "result.json").read_text())
            error = (result.get("exception_info") or {}).get("exception_type")
            if result.get("verifier_result") or error not in HARBOR_INFRA_ERRORS:
                break
        assert result.get("verifier_result"), res.stdout[-3000:] + res.stderr[-2000:]
        rewards[agent] = result["verifier_result"]["rewards"]["reward"]
        graded = json.loads((tmp_path / name / "verifier" / "taskforge.json").read_text())
        assert graded["f2p_total"] > 0
        if agent == "oracle":                   # (the no-op's tree may not even collect)
            assert graded["problems"] == [] and graded["failing"] == [], graded
    assert rewards == {"oracle": 1.0, "nop": 0.0}


NAIVE_TEST_SH = """#!/bin/bash
# A naive Harbor grader: the graded tests' exit status is the reward.
cd /workspace
cp -r /tests/hidden/. /workspace/
run="import json, sys, pytest; p = json.load(open('/tests/grading.json'))
sys.exit(pytest.main(['-q', *p['FAIL_TO_PASS'], *p['PASS_TO_PASS']]))"
python3 -c "$run" && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
"""

EXIT_EARLY = "import os\n\n\ndef pytest_sessionstart(session):\n    os._exit(0)\n"


def verify_like_harbor(task: Path, tmp: Path, test_sh: str | None = None,
                       conftest: str | None = None, solve: bool = False) -> str:
    """tests/test.sh as Harbor's separate verifier runs it: a fresh container of the
    task's image (its main process root, the grader root), /tests uploaded, the
    agent's /workspace restored; returns reward.txt."""
    import shutil

    ws, logs, tests = tmp / "ws", tmp / "logs", tmp / "tests"
    shutil.copytree(task / "environment" / "workspace", ws, symlinks=True)
    shutil.copytree(task / "tests", tests)
    logs.mkdir()
    if conftest is not None:
        (ws / "conftest.py").write_text(conftest)
    if test_sh is not None:
        (tests / "test.sh").write_text(test_sh)
    image = (task / "environment" / "Dockerfile").read_text().split()[1]
    mounts = ["-v", f"{tests}:/tests:ro", "-v", f"{ws}:/workspace", "-v", f"{logs}:/logs/verifier"]
    if solve:
        mounts += ["-v", f"{task / 'solution'}:/solution:ro"]
    script = ("bash /solution/solve.sh && " if solve else "") + "bash /tests/test.sh"
    res = subprocess.run(["docker", "run", "--rm", "--network", "none", "-u", "0", *mounts, image,
                          "bash", "-c", script], capture_output=True, text=True, timeout=600)
    assert (logs / "reward.txt").is_file(), f"exit {res.returncode}: {res.stdout[-2000:]}{res.stderr[-2000:]}"
    return (logs / "reward.txt").read_text().strip()


@pytest.mark.docker
def test_a_workspace_conftest_that_ends_pytest_early_scores_0(exported, tmp_path):
    """The agent leaves a conftest.py that ends pytest with status 0 before any
    test runs: a grader that trusts pytest's exit status pays 1; taskforge's
    grader, reading the supervisor's event stream, pays 0. The gold still earns 1."""
    task = sorted(p for p in exported.iterdir() if p.is_dir())[0]
    assert verify_like_harbor(task, tmp_path / "naive", NAIVE_TEST_SH, EXIT_EARLY) == "1"
    assert verify_like_harbor(task, tmp_path / "ours", None, EXIT_EARLY) == "0"
    assert verify_like_harbor(task, tmp_path / "gold", None, None, solve=True) == "1"
