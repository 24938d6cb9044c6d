"""Episodes: an agent drives a task's workspace in a sandbox turn by turn, then
submits; grading is verify's, in a fresh sandbox. Real engine, real tasks."""
from __future__ import annotations

import base64
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from taskforge.errors import UserError
from taskforge.training.episodes import Episode, EpisodeLimits, Episodes


def solved_files(task: Path, tmp: Path) -> dict[str, bytes]:
    """What the gold patch makes of the files it touches."""
    tree = tmp / "solved"
    shutil.copytree(task / "workspace", tree, symlinks=True)
    subprocess.run(["git", "apply", str(task / "gold.patch")], cwd=tree, check=True)
    out = {}
    for line in (task / "gold.patch").read_text().splitlines():
        if line.startswith("+++ b/"):
            rel = line[6:]
            out[rel] = (tree / rel).read_bytes()
    return out


def write_command(rel: str, data: bytes) -> str:
    """A shell command an agent could send that writes `data` to `rel`."""
    b64 = base64.b64encode(data).decode()
    return (f"python3 - <<'EOF'\nimport base64\nopen({rel!r}, 'wb').write("
            f"base64.b64decode({b64!r}))\nEOF")


def test_an_episode_runs_reads_writes_and_submits(tasks, tmp_path):
    out, ids = tasks
    task = out / ids[0]
    with Episode(task, EpisodeLimits(output_chars=400)) as ep:
        r = ep.run("pwd && whoami && ls")
        assert r.exit_code == 0 and r.output.startswith("/workspace\n") and "root" not in r.output
        assert not ep.run("ls /workspace/hidden 2>/dev/null; test -e hidden").exit_code == 0
        net = ep.run("python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), 3)\"")
        assert net.exit_code != 0                                       # no network
        slow = ep.run("sleep 30", timeout=1)
        assert slow.timed_out and slow.seconds < 10
        big = ep.run("python3 -c \"print('x' * 100000)\"")
        assert big.truncated and len(big.output) < 600 and "characters cut" in big.output
        assert ep.diff() == "" and ep.submit().reward == 0.0           # nothing done: 0
        for rel, data in solved_files(task, tmp_path).items():
            ep.write(rel, data.decode())
            assert ep.read(rel) == data.decode()
        diff = ep.diff()
        assert diff and "hidden" not in diff
        assert subprocess.run(["git", "apply", "--check", "-"], input=diff, text=True,
                              cwd=task / "workspace").returncode == 0
        result = ep.submit()
        assert result.reward == 1.0, result.reasons
        for bad in ("../escape.txt", "/etc/passwd", "a/../../b"):
            with pytest.raises(UserError):
                ep.write(bad, "x")
    assert ep.closed and not ep.tree.exists()
    with pytest.raises(UserError, match="closed"):
        ep.run("true")


def test_the_agents_tree_never_steers_the_host(tasks, tmp_path):
    """A symlink planted in the workspace (to a host file, or a directory swapped
    for one) is read inside the sandbox: the host never follows it, and a diff
    never carries host content."""
    out, ids = tasks
    secret = tmp_path / "host-secret.txt"
    secret.write_text("HOST-ONLY-CONTENT\n")
    with Episode(out / ids[0]) as ep:
        ep.run(f"ln -s {secret} leak.txt && ln -s / rootlink && ln -s /etc/hostname host.txt")
        # A host-side reader following the tree would hand the host file to the agent:
        assert (ep.tree / "leak.txt").read_text() == "HOST-ONLY-CONTENT\n"
        with pytest.raises(UserError):
            ep.read("leak.txt")                      # the sandbox has no such host path
        diff = ep.diff()
        assert "HOST-ONLY-CONTENT" not in diff and "leak.txt" not in diff
        ep.write("rootlink/tmp/planted.txt", "x")     # lands in the sandbox's own /tmp, if anywhere
        assert not Path("/tmp/planted.txt").exists()


def test_many_episodes_expire_when_idle_and_clean_up(tasks):
    import docker

    out, ids = tasks
    pool = Episodes(EpisodeLimits(idle_seconds=2), max_episodes=3)
    try:
        eps = [pool.start(out / ids[i % len(ids)]) for i in range(3)]
        with pytest.raises(Exception, match="episodes are open"):
            pool.start(out / ids[0])
        keep = eps[0]
        deadline = time.monotonic() + 30
        while len(pool.open_ids()) > 1 and time.monotonic() < deadline:
            keep.run("true")                         # used: stays
            time.sleep(0.5)
        assert pool.open_ids() == [keep.id] and pool.expired == 2
        assert all(e.closed for e in eps[1:])
        with pytest.raises(UserError, match="no open episode"):
            pool.get(eps[1].id)
    finally:
        pool.close_all()
    left = docker.from_env().containers.list(all=True, ignore_removed=True, filters={"label": "taskforge.role=episode"})
    assert left == []


def test_an_episode_starting_during_close_all_is_not_left(tasks):
    """close_all while a start is still making its sandbox: the start fails,
    and its container goes (it used to join the pool after close_all had
    emptied it, and lived on)."""
    import threading

    import docker

    out, ids = tasks
    pool = Episodes()
    got: list = []

    def start() -> None:
        try:
            got.append(pool.start(out / ids[0]))
        except Exception as exc:  # noqa: BLE001 - the test reads what it was
            got.append(exc)

    t = threading.Thread(target=start)
    t.start()
    deadline = time.monotonic() + 30
    while not pool._pending and t.is_alive() and time.monotonic() < deadline:
        time.sleep(0.001)
    assert pool._pending, "the start ended before close_all could race it"
    pool.close_all()
    t.join(120)
    assert len(got) == 1 and isinstance(got[0], Exception) and "closed" in str(got[0]), got
    with pytest.raises(Exception, match="closed"):
        pool.start(out / ids[0])
    left = docker.from_env().containers.list(all=True, ignore_removed=True,
                                             filters={"label": "taskforge.role=episode"})
    assert left == []


def test_episodes_over_http(tasks, tmp_path):
    """The same turns through `taskforge serve`: start, run, write, diff, submit
    (graded like any answer), close; unknown ids are 404."""
    from tests.test_server import call, server

    out, ids = tasks
    task = out / ids[0]
    with server(out, tmp_path, "--concurrency", "2") as base:
        code, body, _ = call(base, "/episodes", {"instance_id": ids[0]})
        assert code == 201 and body["problem_statement"].startswith("#"), body
        eid = body["episode_id"]
        code, body, _ = call(base, f"/episodes/{eid}/run", {"command": "ls"})
        assert code == 200 and body["exit_code"] == 0 and body["output"]
        for rel, data in solved_files(task, tmp_path).items():
            code, _, _ = call(base, f"/episodes/{eid}/write", {"path": rel, "content": data.decode()})
            assert code == 200
        code, body, _ = call(base, f"/episodes/{eid}/diff")
        assert code == 200 and body["diff"].startswith("diff --git")
        code, body, _ = call(base, f"/episodes/{eid}/submit", {})
        assert code == 200 and body["reward"] == 1.0, body
        code, other, _ = call(base, "/episodes", {"instance_id": ids[1]})
        code, body, _ = call(base, f"/episodes/{other['episode_id']}/submit", {})
        assert code == 200 and body["reward"] == 0.0, body
        assert call(base, f"/episodes/{eid}", method="DELETE")[0] == 200
        assert call(base, f"/episodes/{eid}/run", {"command": "ls"})[0] == 404
        assert call(base, "/episodes", {"instance_id": "nope"})[0] == 404


@pytest.mark.trainers
def test_mini_swe_agent_scripted_episodes(tasks, tmp_path, monkeypatch):
    """mini-swe-agent's own DefaultAgent with its default templates and its
    DeterministicModel: a script that fixes the task earns 1; one that only looks
    around and submits earns 0."""
    monkeypatch.setenv("MSWEA_SILENT_STARTUP", "1")
    import yaml
    from minisweagent import package_dir
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.models.test_models import DeterministicModel, make_output

    from taskforge.training.integrations.minisweagent import SUBMIT_MARKER, TaskforgeEnvironment

    out, ids = tasks
    task = out / ids[0]
    agent_cfg = yaml.safe_load((package_dir / "config" / "default.yaml").read_text())["agent"]
    fix = [make_output("Look first.", [{"command": "ls && git status --short"}])]
    fix += [make_output(f"Write {rel}.", [{"command": write_command(rel, data)}])
            for rel, data in solved_files(task, tmp_path).items()]
    fix += [make_output("Run the visible tests.", [{"command": "python3 -m pytest -q 2>&1 | tail -2"}]),
            make_output("Done.", [{"command": f"echo {SUBMIT_MARKER}"}])]
    idle = [make_output("Look.", [{"command": "ls"}]),
            make_output("Done.", [{"command": f"echo {SUBMIT_MARKER}"}])]
    rewards = []
    for script in (fix, idle):
        env = TaskforgeEnvironment(task)
        try:
            agent = DefaultAgent(DeterministicModel(outputs=script), env,
                                 **{**agent_cfg, "step_limit": 20, "cost_limit": 100})
            info = agent.run(env.task_statement())
            assert info["exit_status"] == "Submitted", info
            rewards.append(env.reward().reward)
        finally:
            env.close()
    assert rewards == [1.0, 0.0]
