"""OpenEnv (openenv-core's own server code and its GenericEnvClient over a local
WebSocket): `taskforge serve --openenv` mounts the server; reset opens an episode
of a task, steps call taskforge's tools, and the submit step returns the reward:
1 for the fix, 0 for looking around. Real engine, real task, real server process."""
from __future__ import annotations

import socket
import subprocess
import time

import pytest

from tests.conftest import CLI, cli_env

pytestmark = pytest.mark.frameworks


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def openenv_server(tasks, tmp_path_factory):
    """`taskforge serve --openenv` on a free loopback port; yields its base URL."""
    import httpx

    out, _ = tasks
    port = free_port()
    log = tmp_path_factory.mktemp("openenv") / "serve.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([*CLI, "serve", "--tasks", str(out), "--port", str(port), "--openenv",
                                 "--no-stats", "--warm", "0", "--max-episodes", "4"],
                                stdout=fh, stderr=subprocess.STDOUT, env=cli_env())
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/openenv/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(90)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)


def tool(name: str, **arguments) -> dict:
    return {"type": "call_tool", "tool_name": name, "arguments": arguments}


def test_openenv_client_scripted_episodes(openenv_server, tasks, tmp_path):
    import httpx
    from openenv.core import GenericEnvClient

    from tests.test_episodes import solved_files

    out, ids = tasks
    task = out / ids[0]
    fix = [tool("bash", command="ls"),
           *[tool("str_replace_editor", command="create", path=rel, file_text=data.decode())
             for rel, data in solved_files(task, tmp_path).items()],
           tool("submit")]
    idle = [tool("bash", command="ls -a"), tool("str_replace_editor", command="view", path="."),
            tool("submit")]
    rewards = []
    with GenericEnvClient(base_url=f"{openenv_server}/openenv").sync() as env:
        listed = env.step({"type": "list_tools"}).observation["tools"]
        assert [t["name"] for t in listed] == ["bash", "str_replace_editor", "submit"]
        for script in (fix, idle):
            first = env.reset(instance_id=ids[0])
            assert first.observation["instance_id"] == ids[0] and first.observation["problem_statement"]
            assert httpx.get(f"{openenv_server}/health").json()["status"] == "ok"
            results = [env.step(a) for a in script]
            assert not any(r.done for r in results[:-1]) and all(r.reward is None for r in results[:-1])
            assert results[0].observation["result"]["output"].endswith("[exit code 0]")
            last = results[-1]
            assert last.done and last.observation["result"]["result"]["instance_id"] == ids[0]
            rewards.append(last.reward)
            after = env.step(tool("bash", command="ls"))
            assert after.observation["error"]["message"] == "the episode was submitted"
        assert env.state()["step_count"] == len(idle)
    assert rewards == [1.0, 0.0]


def test_reset_to_an_unknown_task_is_an_error(openenv_server):
    from openenv.core import GenericEnvClient

    with GenericEnvClient(base_url=f"{openenv_server}/openenv").sync() as env:
        with pytest.raises(Exception, match="no task"):
            env.reset(instance_id="no-such-task")
